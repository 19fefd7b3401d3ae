#pragma once
// A caching allocator per device: training repeats the same buffer sizes every step, so freed
// blocks are kept in per-size free lists and handed out again instead of going back to the system
// (no page faults on the CPU, no cudaMalloc per op on the GPU).
#include <cstddef>

#include "core/dtype.h"

namespace flextp {

struct AllocatorStats {
  size_t in_use = 0;       // bytes handed out now
  size_t cached = 0;       // bytes kept in free lists
  size_t peak_in_use = 0;  // high-water mark of in_use
};

void* device_alloc(Device d, size_t bytes);
void device_free(Device d, void* p, size_t bytes);
AllocatorStats allocator_stats(Device d);

}  // namespace flextp

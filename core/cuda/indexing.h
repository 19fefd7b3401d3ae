#pragma once
// Index arithmetic shared by CUDA kernels and their CPU tests (host and device functions).
#include <cstddef>
#include <cstdint>

#include "core/random.h"  // FLEXTP_HD

namespace flextp::cuda {

// The part that element i of a packed buffer belongs to: the last k with start[k] <= i, for
// parts starting at increasing offsets start[0] = 0 < start[1] < ... (binary search).
FLEXTP_HD int part_of(const uint64_t* start, int parts, uint64_t i) {
  int lo = 0, hi = parts - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (start[mid] <= i)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// How column sums split rows into chunks (core/cuda/column_sums.cuh): about 64 rows each, at
// most 512 chunks; every row in exactly one chunk, none empty.
struct RowChunks {
  size_t chunks, per;
};
inline RowChunks row_chunks(size_t rows) {
  size_t chunks = rows / 64;
  if (chunks < 1) chunks = 1;
  if (chunks > 512) chunks = 512;
  size_t per = (rows + chunks - 1) / chunks;
  if (per == 0) per = 1;
  chunks = (rows + per - 1) / per;
  if (chunks == 0) chunks = 1;
  return {chunks, per};
}

}  // namespace flextp::cuda

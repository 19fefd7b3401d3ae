#include "core/allocator.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/cuda/cuda_runtime_api.h"
#include "core/error.h"

namespace flextp {
namespace {

// Blocks are rounded up so that nearby sizes share a free list.
size_t round_size(size_t bytes) {
  const size_t q = 512;
  return bytes == 0 ? q : (bytes + q - 1) / q * q;
}

class CachingAllocator {
 public:
  explicit CachingAllocator(Device d) : device_(d) {}

  void* alloc(size_t bytes) {
    size_t size = round_size(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    auto& list = free_[size];
    void* p = nullptr;
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
      stats_.cached -= size;
    } else {
      p = system_alloc(size);
      if (!p) {  // give the cache back and try once more before failing
        release_cache_locked();
        p = system_alloc(size);
      }
      FLEXTP_CHECK(p, "out of memory on ", device_.str(), " allocating ", size, " bytes (",
                   stats_.in_use, " bytes in use)");
    }
    stats_.in_use += size;
    if (stats_.in_use > stats_.peak_in_use) stats_.peak_in_use = stats_.in_use;
    return p;
  }

  void free(void* p, size_t bytes) {
    size_t size = round_size(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    free_[size].push_back(p);
    stats_.in_use -= size;
    stats_.cached += size;
  }

  AllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  void* system_alloc(size_t size) {
    if (device_.is_cpu()) return std::aligned_alloc(64, size);
    return cuda::raw_malloc(device_.index, size);
  }
  void system_free(void* p) {
    if (device_.is_cpu())
      std::free(p);
    else
      cuda::raw_free(device_.index, p);
  }
  void release_cache_locked() {
    for (auto& [size, list] : free_) {
      for (void* p : list) system_free(p);
      stats_.cached -= size * list.size();
      list.clear();
    }
  }

  Device device_;
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  AllocatorStats stats_;
};

CachingAllocator& allocator_for(Device d) {
  // Leaked on purpose: tensors in static objects may be freed after main returns.
  static auto* cpu = new CachingAllocator(Device::cpu());
  static auto* gpus = new std::vector<CachingAllocator*>();  // (the list too: LeakSanitizer)
  static std::mutex mu;
  if (d.is_cpu()) return *cpu;
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<int>(gpus->size()) <= d.index) gpus->resize(d.index + 1, nullptr);
  if (!(*gpus)[d.index]) (*gpus)[d.index] = new CachingAllocator(d);
  return *(*gpus)[d.index];
}

}  // namespace

void* device_alloc(Device d, size_t bytes) { return allocator_for(d).alloc(bytes); }
void device_free(Device d, void* p, size_t bytes) { allocator_for(d).free(p, bytes); }
AllocatorStats allocator_stats(Device d) { return allocator_for(d).stats(); }

}  // namespace flextp

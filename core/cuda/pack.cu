// GPU side of the pack of core/ops/shape_ops.h: all parts in one launch (a repartition packs
// dozens of unit slices per destination), instead of one copy call per part.
#include <vector>

#include "core/cuda/cuda_runtime_api.h"
#include "core/cuda/launch.h"
#include "core/cuda/indexing.h"
#include "core/ops/shape_ops.h"

namespace flextp::cuda {
namespace {

// Part k holds bytes [start[k], start[k + 1]) of out; units are 4-byte words when all sizes and
// addresses allow, else bytes.
template <typename W>
__global__ void pack_kernel(const uint64_t* src, const uint64_t* start, int parts, W* out,
                            size_t total) {
  FLEXTP_CUDA_GRID_LOOP(i, total) {
    int k = part_of(start, parts, i);
    out[i] = reinterpret_cast<const W*>(src[k])[i - start[k]];
  }
}

}  // namespace

void pack(const std::vector<Tensor>& parts, Tensor& out) {
  std::vector<uint64_t> table;  // source addresses, then start offsets (in bytes for now)
  std::vector<uint64_t> starts;
  size_t at = 0;
  bool words = reinterpret_cast<uintptr_t>(out.raw()) % 4 == 0;
  for (const Tensor& p : parts) {
    if (p.nbytes() == 0) continue;
    FLEXTP_CHECK(p.is_cuda(), "pack: part ", p.str(), " is not on the GPU");
    table.push_back(reinterpret_cast<uintptr_t>(p.raw()));
    starts.push_back(at);
    words = words && p.nbytes() % 4 == 0 && reinterpret_cast<uintptr_t>(p.raw()) % 4 == 0;
    at += p.nbytes();
  }
  if (table.empty()) return;
  size_t unit = words ? 4 : 1;
  for (uint64_t& s : starts) s /= unit;
  int n = static_cast<int>(table.size());
  table.insert(table.end(), starts.begin(), starts.end());
  // Device memory for the table: 8 bytes per entry (tensors have no 64-bit integer dtype).
  Tensor dev = Tensor::empty({static_cast<int64_t>(table.size())}, DType::F64, out.device());
  cuda::memcpy(dev.raw(), true, table.data(), false, table.size() * sizeof(uint64_t));
  const uint64_t* d = static_cast<const uint64_t*>(dev.raw());
  size_t total = at / unit;
  if (words)
    pack_kernel<uint32_t><<<grid_for(total), kBlock, 0, stream()>>>(d, d + n, n, static_cast<uint32_t*>(out.raw()), total);
  else
    pack_kernel<unsigned char><<<grid_for(total), kBlock, 0, stream()>>>(d, d + n, n, static_cast<unsigned char*>(out.raw()), total);
  FLEXTP_CUDA_LAUNCHED("pack");
}

}  // namespace flextp::cuda

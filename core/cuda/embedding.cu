// GPU kernels of core/ops/embedding.h. The ids are checked on the host first (a few kilobytes),
// so a bad id is an error naming it rather than a read outside the table.
#include <vector>

#include "core/cuda/launch.h"
#include "core/ops/embedding.h"

namespace flextp::cuda {
namespace {

void check_ids(const Tensor& ids, int64_t vocab) {
  std::vector<int32_t> v = ids.to_vector<int32_t>();
  for (size_t i = 0; i < v.size(); ++i)
    FLEXTP_CHECK(v[i] >= -1 && v[i] < vocab, "embedding: id ", v[i], " at position ", i,
                 " is outside the table's ", vocab, " rows");
}

template <typename T>
__global__ void embedding_forward_kernel(const int32_t* ids, const T* table, T* out, size_t n,
                                         int64_t c) {
  FLEXTP_CUDA_GRID_LOOP(i, n * c) {
    int32_t id = ids[i / c];
    out[i] = id < 0 ? T(0) : table[static_cast<size_t>(id) * c + i % c];
  }
}

// Two positions may look up the same row, so the rows are accumulated atomically.
template <typename T>
__global__ void embedding_backward_kernel(const int32_t* ids, const T* dout, T* dtable, size_t n,
                                          int64_t c) {
  FLEXTP_CUDA_GRID_LOOP(i, n * c) {
    int32_t id = ids[i / c];
    if (id >= 0) atomicAdd(dtable + static_cast<size_t>(id) * c + i % c, dout[i]);
  }
}

}  // namespace

void embedding_forward(const Tensor& ids, const Tensor& table, Tensor& out) {
  int64_t c = table.size(1);
  size_t n = ids.numel();
  check_ids(ids, table.size(0));
  if (n == 0 || c == 0) return;
  dispatch_float(table.dtype(), "embedding", [&](auto tag) {
    using T = decltype(tag);
    embedding_forward_kernel<T><<<grid_for(n * c), kBlock, 0, stream()>>>(
        ids.data<int32_t>(), table.data<T>(), out.data<T>(), n, c);
  });
  FLEXTP_CUDA_LAUNCHED("embedding");
}

void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable) {
  int64_t c = dtable.size(1);
  size_t n = ids.numel();
  dtable.zero_();
  if (n == 0 || c == 0) return;
  dispatch_float(dtable.dtype(), "embedding backward", [&](auto tag) {
    using T = decltype(tag);
    embedding_backward_kernel<T><<<grid_for(n * c), kBlock, 0, stream()>>>(
        ids.data<int32_t>(), dout.data<T>(), dtable.data<T>(), n, c);
  });
  FLEXTP_CUDA_LAUNCHED("embedding backward");
}

}  // namespace flextp::cuda

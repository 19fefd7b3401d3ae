// GPU kernels of core/ops/embedding.h (the op has checked the ids).
#include "core/cuda/launch.h"
#include "core/ops/embedding.h"

namespace flextp::cuda {
namespace {

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

// GPU kernels of core/ops/softmax.h: one block per row.
#include "core/cuda/launch.h"
#include "core/ops/softmax.h"

namespace flextp::cuda {
namespace {

template <typename T>
__global__ void softmax_forward_kernel(const T* x, T* y, int64_t c) {
  const T* in = x + blockIdx.x * c;
  T* out = y + blockIdx.x * c;
  T m = -INFINITY;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) m = max(m, in[j]);
  m = block_max(m);
  T s = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    T e = exp(in[j] - m);
    out[j] = e;
    s += e;
  }
  T inv = T(1) / block_sum(s);
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) out[j] *= inv;
}

template <typename T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, int64_t c) {
  size_t base = blockIdx.x * static_cast<size_t>(c);
  T dot = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) dot += y[base + j] * dy[base + j];
  dot = block_sum(dot);
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) dx[base + j] = y[base + j] * (dy[base + j] - dot);
}

}  // namespace

void softmax_forward(const Tensor& x, Tensor& y) {
  int64_t c = x.size(-1), rows = c ? x.numel() / c : 0;
  if (rows == 0) return;
  dispatch_float(x.dtype(), "softmax", [&](auto tag) {
    using T = decltype(tag);
    softmax_forward_kernel<T><<<rows, kBlock, 0, stream()>>>(x.data<T>(), y.data<T>(), c);
  });
  FLEXTP_CUDA_LAUNCHED("softmax");
}

void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  int64_t c = y.size(-1), rows = c ? y.numel() / c : 0;
  if (rows == 0) return;
  dispatch_float(y.dtype(), "softmax backward", [&](auto tag) {
    using T = decltype(tag);
    softmax_backward_kernel<T><<<rows, kBlock, 0, stream()>>>(y.data<T>(), dy.data<T>(), dx.data<T>(), c);
  });
  FLEXTP_CUDA_LAUNCHED("softmax backward");
}

}  // namespace flextp::cuda

// GPU kernels of core/ops/silu.h (as on the CPU: x / (1 + exp(-x))).
#include "core/cuda/launch.h"
#include "core/ops/silu.h"

namespace flextp::cuda {
namespace {

template <typename T>
__global__ void silu_forward_kernel(const T* x, T* y, size_t n) {
  FLEXTP_CUDA_GRID_LOOP(i, n) {
    T v = x[i];
    y[i] = v / (T(1) + exp(-v));
  }
}

template <typename T>
__global__ void silu_backward_kernel(const T* x, const T* dy, T* dx, size_t n) {
  FLEXTP_CUDA_GRID_LOOP(i, n) {
    T v = x[i];
    T s = T(1) / (T(1) + exp(-v));
    dx[i] = dy[i] * s * (T(1) + v * (T(1) - s));
  }
}

}  // namespace

void silu_forward(const Tensor& x, Tensor& y) {
  size_t n = x.numel();
  if (n == 0) return;
  dispatch_float(x.dtype(), "cuda silu", [&](auto tag) {
    using T = decltype(tag);
    silu_forward_kernel<<<grid_for(n), kBlock, 0, stream()>>>(x.data<T>(), y.data<T>(), n);
  });
  FLEXTP_CUDA_LAUNCHED("silu");
}

void silu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  size_t n = x.numel();
  if (n == 0) return;
  dispatch_float(x.dtype(), "cuda silu backward", [&](auto tag) {
    using T = decltype(tag);
    silu_backward_kernel<<<grid_for(n), kBlock, 0, stream()>>>(x.data<T>(), dy.data<T>(), dx.data<T>(), n);
  });
  FLEXTP_CUDA_LAUNCHED("silu");
}

}  // namespace flextp::cuda

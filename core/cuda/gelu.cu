// GPU kernels of core/ops/gelu.h (tanh form, as on the CPU).
#include "core/cuda/launch.h"
#include "core/ops/gelu.h"

namespace flextp::cuda {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;

template <typename T>
__global__ void gelu_forward_kernel(const T* x, T* y, size_t n) {
  FLEXTP_CUDA_GRID_LOOP(i, n) {
    T v = x[i];
    T u = T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v);
    y[i] = T(0.5) * v * (T(1) + tanh(u));
  }
}

template <typename T>
__global__ void gelu_backward_kernel(const T* x, const T* dy, T* dx, size_t n) {
  FLEXTP_CUDA_GRID_LOOP(i, n) {
    T v = x[i];
    T u = T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v);
    T t = tanh(u);
    T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
    dx[i] = dy[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
  }
}

}  // namespace

void gelu_forward(const Tensor& x, Tensor& y) {
  size_t n = x.numel();
  if (n == 0) return;
  dispatch_float(x.dtype(), "cuda gelu", [&](auto tag) {
    using T = decltype(tag);
    gelu_forward_kernel<<<grid_for(n), kBlock, 0, stream()>>>(x.data<T>(), y.data<T>(), n);
  });
  FLEXTP_CUDA_LAUNCHED("gelu");
}

void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  size_t n = x.numel();
  if (n == 0) return;
  dispatch_float(x.dtype(), "cuda gelu backward", [&](auto tag) {
    using T = decltype(tag);
    gelu_backward_kernel<<<grid_for(n), kBlock, 0, stream()>>>(x.data<T>(), dy.data<T>(), dx.data<T>(), n);
  });
  FLEXTP_CUDA_LAUNCHED("gelu");
}

}  // namespace flextp::cuda

// GPU kernels of core/ops/bias_gelu.h: gelu(x + bias) in the tanh form, as on the CPU.
#include "core/cuda/launch.h"
#include "core/ops/bias_gelu.h"

namespace flextp::cuda {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;

template <typename T>
__global__ void bias_gelu_forward_kernel(const T* x, const T* bias, T* y, size_t n, size_t m) {
  FLEXTP_CUDA_GRID_LOOP(i, n) {
    T v = x[i] + bias[i % m];
    T u = T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v);
    y[i] = T(0.5) * v * (T(1) + tanh(u));
  }
}

template <typename T>
__global__ void bias_gelu_backward_kernel(const T* x, const T* bias, const T* dy, T* dx, size_t n, size_t m) {
  FLEXTP_CUDA_GRID_LOOP(i, n) {
    T v = x[i] + bias[i % m];
    T u = T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v);
    T t = tanh(u);
    T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
    dx[i] = dy[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
  }
}

}  // namespace

void bias_gelu_forward(const Tensor& x, const Tensor& bias, Tensor& y) {
  size_t n = x.numel(), m = bias.numel();
  if (n == 0 || m == 0) return;
  dispatch_float(x.dtype(), "cuda bias_gelu", [&](auto tag) {
    using T = decltype(tag);
    bias_gelu_forward_kernel<<<grid_for(n), kBlock, 0, stream()>>>(x.data<T>(), bias.data<T>(), y.data<T>(), n, m);
  });
  FLEXTP_CUDA_LAUNCHED("bias_gelu");
}

void bias_gelu_backward(const Tensor& x, const Tensor& bias, const Tensor& dy, Tensor& dx) {
  size_t n = x.numel(), m = bias.numel();
  if (n == 0 || m == 0) return;
  dispatch_float(x.dtype(), "cuda bias_gelu backward", [&](auto tag) {
    using T = decltype(tag);
    bias_gelu_backward_kernel<<<grid_for(n), kBlock, 0, stream()>>>(x.data<T>(), bias.data<T>(), dy.data<T>(),
                                                                    dx.data<T>(), n, m);
  });
  FLEXTP_CUDA_LAUNCHED("bias_gelu backward");
}

}  // namespace flextp::cuda

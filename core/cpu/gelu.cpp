#include "core/ops/gelu.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {
namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
constexpr int64_t kGrain = 1 << 13;
}  // namespace

void gelu_forward(const Tensor& x, Tensor& y) {
  detail::dispatch_float(x.dtype(), "gelu", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        T v = px[i];
        T u = T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v);
        py[i] = T(0.5) * v * (T(1) + std::tanh(u));
      }
    });
  });
}

void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  detail::dispatch_float(x.dtype(), "gelu backward", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pg = dy.data<T>();
    T* pd = dx.data<T>();
    parallel_for(x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        T v = px[i];
        T u = T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v);
        T t = std::tanh(u);
        T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
        pd[i] = pg[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
      }
    });
  });
}

}  // namespace flextp::cpu

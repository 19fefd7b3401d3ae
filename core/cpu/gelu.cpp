#include "core/ops/gelu.h"

#include "core/cpu/eigen.h"
#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {
namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
constexpr int64_t kGrain = 1 << 13;
}  // namespace

// Eigen's array tanh is vectorised (a rational approximation accurate to a few ulp in float).
void gelu_forward(const Tensor& x, Tensor& y) {
  detail::dispatch_float(x.dtype(), "gelu", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      ConstVectorMap<T> v(px + lo, hi - lo);
      auto u = T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v);
      VectorMap<T>(py + lo, hi - lo) = T(0.5) * v * (T(1) + u.tanh());
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
      ConstVectorMap<T> v(px + lo, hi - lo), g(pg + lo, hi - lo);
      Eigen::Array<T, Eigen::Dynamic, 1> t = (T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v)).tanh();
      auto du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
      VectorMap<T>(pd + lo, hi - lo) = g * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
    });
  });
}

}  // namespace flextp::cpu

#include "core/ops/silu.h"

#include "core/cpu/eigen.h"
#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {
namespace {
constexpr int64_t kGrain = 1 << 13;
}  // namespace

// sigmoid(x) = 1 / (1 + exp(-x)): exp(-x) overflows to inf for x below about -88 (f32), which
// gives sigmoid 0 and silu -0, the right limit; no NaN arises.
void silu_forward(const Tensor& x, Tensor& y) {
  detail::dispatch_float(x.dtype(), "silu", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      ConstVectorMap<T> v(px + lo, hi - lo);
      VectorMap<T>(py + lo, hi - lo) = v / (T(1) + (-v).exp());
    });
  });
}

// d/dx x s(x) = s(x) (1 + x (1 - s(x))).
void silu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  detail::dispatch_float(x.dtype(), "silu backward", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pg = dy.data<T>();
    T* pd = dx.data<T>();
    parallel_for(x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      ConstVectorMap<T> v(px + lo, hi - lo), g(pg + lo, hi - lo);
      Eigen::Array<T, Eigen::Dynamic, 1> s = T(1) / (T(1) + (-v).exp());
      VectorMap<T>(pd + lo, hi - lo) = g * s * (T(1) + v * (T(1) - s));
    });
  });
}

}  // namespace flextp::cpu

#include "core/ops/adamw.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {

namespace {
// One thread's range, on restrict pointers and by-value constants so that the compiler vectorizes
// it (through the lambda's captured references it could not rule out aliasing).
template <typename T>
void adamw_range(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n, T b1,
                 T b2, T eps, T lr, T wd, T c1, T c2) {
  for (int64_t i = 0; i < n; ++i) {
    T gi = g[i];
    T mi = m[i] = b1 * m[i] + (T(1) - b1) * gi;
    T vi = v[i] = b2 * v[i] + (T(1) - b2) * gi * gi;
    p[i] -= lr * (mi * c1 / (std::sqrt(vi * c2) + eps) + wd * p[i]);
  }
}
}  // namespace

void adamw_update(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, const AdamWStep& s) {
  detail::dispatch_float(p.dtype(), "adamw", [&](auto tag) {
    using T = decltype(tag);
    T* pp = p.data<T>();
    const T* pg = g.data<T>();
    T *pm = m.data<T>(), *pv = v.data<T>();
    const T b1 = T(s.beta1), b2 = T(s.beta2), eps = T(s.eps), lr = T(s.lr),
            wd = T(s.weight_decay);
    const T c1 = T(1.0 / (1.0 - std::pow(s.beta1, double(s.t))));
    const T c2 = T(1.0 / (1.0 - std::pow(s.beta2, double(s.t))));
    parallel_for(p.numel(), 1 << 14, [&](int64_t lo, int64_t hi) {
      adamw_range(pp + lo, pg + lo, pm + lo, pv + lo, hi - lo, b1, b2, eps, lr, wd, c1, c2);
    });
  });
}

}  // namespace flextp::cpu

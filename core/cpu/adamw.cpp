#include "core/ops/adamw.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {

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
      for (int64_t i = lo; i < hi; ++i) {
        T gi = pg[i];
        T mi = pm[i] = b1 * pm[i] + (T(1) - b1) * gi;
        T vi = pv[i] = b2 * pv[i] + (T(1) - b2) * gi * gi;
        pp[i] -= lr * (mi * c1 / (std::sqrt(vi * c2) + eps) + wd * pp[i]);
      }
    });
  });
}

}  // namespace flextp::cpu

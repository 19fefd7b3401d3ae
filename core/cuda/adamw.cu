// GPU kernel of core/ops/adamw.h: the fused update, one thread per element.
#include <cmath>

#include "core/cuda/launch.h"
#include "core/ops/adamw.h"

namespace flextp::cuda {
namespace {

template <typename T>
__global__ void adamw_kernel(T* p, const T* g, T* m, T* v, size_t n, T b1, T b2, T eps, T lr,
                             T wd, T c1, T c2) {
  FLEXTP_CUDA_GRID_LOOP(i, n) {
    T gi = g[i];
    T mi = m[i] = b1 * m[i] + (T(1) - b1) * gi;
    T vi = v[i] = b2 * v[i] + (T(1) - b2) * gi * gi;
    p[i] -= lr * (mi * c1 / (sqrt(vi * c2) + eps) + wd * p[i]);
  }
}

}  // namespace

void adamw_update(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, const AdamWStep& s) {
  size_t n = p.numel();
  if (n == 0) return;
  dispatch_float(p.dtype(), "adamw", [&](auto tag) {
    using T = decltype(tag);
    T c1 = T(1.0 / (1.0 - std::pow(s.beta1, double(s.t))));
    T c2 = T(1.0 / (1.0 - std::pow(s.beta2, double(s.t))));
    adamw_kernel<T><<<grid_for(n), kBlock, 0, stream()>>>(
        p.data<T>(), g.data<T>(), m.data<T>(), v.data<T>(), n, T(s.beta1), T(s.beta2), T(s.eps),
        T(s.lr), T(s.weight_decay), c1, c2);
  });
  FLEXTP_CUDA_LAUNCHED("adamw");
}

}  // namespace flextp::cuda

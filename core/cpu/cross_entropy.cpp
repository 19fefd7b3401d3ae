#include "core/ops/cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "core/cpu/eigen.h"
#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {

void cross_entropy_forward(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                           int64_t counted, Tensor& loss, Tensor& lse) {
  int64_t n = logits.size(0), v = logits.size(1);
  const int32_t* pt = targets.data<int32_t>();
  detail::dispatch_float(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    const T* px = logits.data<T>();
    T* plse = lse.data<T>();
    parallel_for(n, std::max<int64_t>(1, 4096 / std::max<int64_t>(v, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        ConstVectorMap<T> row(px + i * v, v);  // Eigen's exp is vectorised
        T m = row.maxCoeff();
        plse[i] = m + std::log((row - m).exp().sum());
      }
    });
    double total = 0;
    for (int64_t i = 0; i < n; ++i)
      if (pt[i] != ignore_index) total += static_cast<double>(plse[i] - px[i * v + pt[i]]);
    loss.data<T>()[0] = static_cast<T>(counted ? total / counted : 0.0);
  });
}

void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                            int32_t ignore_index, double scale, Tensor& dlogits) {
  int64_t n = logits.size(0), v = logits.size(1);
  const int32_t* pt = targets.data<int32_t>();
  detail::dispatch_float(logits.dtype(), "cross_entropy backward", [&](auto tag) {
    using T = decltype(tag);
    const T* px = logits.data<T>();
    const T* plse = lse.data<T>();
    T* pd = dlogits.data<T>();
    T s = static_cast<T>(scale);
    parallel_for(n, std::max<int64_t>(1, 4096 / std::max<int64_t>(v, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        T* d = pd + i * v;
        if (pt[i] == ignore_index) {
          std::fill(d, d + v, T(0));
          continue;
        }
        VectorMap<T>(d, v) = s * (ConstVectorMap<T>(px + i * v, v) - plse[i]).exp();
        d[pt[i]] -= s;
      }
    });
  });
}

}  // namespace flextp::cpu

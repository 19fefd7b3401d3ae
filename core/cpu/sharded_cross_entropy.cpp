#include "core/ops/sharded_cross_entropy.h"

#include <algorithm>
#include <limits>

#include "core/cpu/eigen.h"
#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {
namespace {
int64_t grain(int64_t cols) { return std::max<int64_t>(1, 4096 / std::max<int64_t>(cols, 1)); }
}  // namespace

void sharded_ce_row_max(const Tensor& logits, Tensor& row_max) {
  detail::dispatch_float(logits.dtype(), "cross-entropy row max", [&](auto tag) {
    using T = decltype(tag);
    int64_t n = logits.size(0), v = logits.size(1);
    const T* px = logits.data<T>();
    T* pm = row_max.data<T>();
    parallel_for(n, grain(v), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        pm[i] = v ? ConstVectorMap<T>(px + i * v, v).maxCoeff() : -std::numeric_limits<T>::infinity();
    });
  });
}

void sharded_ce_sums(const Tensor& logits, const Tensor& row_max, const Tensor& local_target,
                     Tensor& sum_exp, Tensor& target_logit) {
  detail::dispatch_float(logits.dtype(), "cross-entropy sums", [&](auto tag) {
    using T = decltype(tag);
    int64_t n = logits.size(0), v = logits.size(1);
    const T *px = logits.data<T>(), *pm = row_max.data<T>();
    const int32_t* pt = local_target.data<int32_t>();
    T *ps = sum_exp.data<T>(), *pl = target_logit.data<T>();
    parallel_for(n, grain(v), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        ps[i] = v ? (ConstVectorMap<T>(px + i * v, v) - pm[i]).exp().sum() : T(0);
        pl[i] = pt[i] >= 0 ? px[i * v + pt[i]] : T(0);
      }
    });
  });
}

void sharded_ce_backward(const Tensor& logits, const Tensor& local_target, const Tensor& lse,
                         const Tensor& row_scale, Tensor& dlogits) {
  detail::dispatch_float(logits.dtype(), "cross-entropy backward", [&](auto tag) {
    using T = decltype(tag);
    int64_t n = logits.size(0), v = logits.size(1);
    const T *px = logits.data<T>(), *pl = lse.data<T>(), *ps = row_scale.data<T>();
    const int32_t* pt = local_target.data<int32_t>();
    T* pd = dlogits.data<T>();
    parallel_for(n, grain(v), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        VectorMap<T> d(pd + i * v, v);
        if (ps[i] == T(0)) {
          d.setZero();
          continue;
        }
        d = ps[i] * (ConstVectorMap<T>(px + i * v, v) - pl[i]).exp();
        if (pt[i] >= 0) d[pt[i]] -= ps[i];
      }
    });
  });
}

}  // namespace flextp::cpu

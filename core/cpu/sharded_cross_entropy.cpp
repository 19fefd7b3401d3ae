#include "core/ops/sharded_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/cpu/eigen.h"
#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {
namespace {
int64_t grain(int64_t cols) { return std::max<int64_t>(1, 4096 / std::max<int64_t>(cols, 1)); }

}  // namespace

void sharded_ce_row_max(const Tensor& logits, const Tensor& runs, Tensor& row_max) {
  detail::dispatch_float(logits.dtype(), "cross-entropy row max", [&](auto tag) {
    using T = decltype(tag);
    int64_t n = logits.size(0), v = logits.size(1), nr = runs.size(0);
    const T* px = logits.data<T>();
    const int32_t* pr = runs.data<int32_t>();
    T* pm = row_max.data<T>();
    parallel_for(n, grain(v), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t r = 0; r < nr; ++r)
          m = std::max(m, ConstVectorMap<T>(px + i * v + pr[2 * r], pr[2 * r + 1] - pr[2 * r]).maxCoeff());
        pm[i] = m;
      }
    });
  });
}

void sharded_ce_sums(const Tensor& logits, const Tensor& runs, const Tensor& row_max,
                     const Tensor& local_target, Tensor& sum_exp, Tensor& target_logit) {
  detail::dispatch_float(logits.dtype(), "cross-entropy sums", [&](auto tag) {
    using T = decltype(tag);
    int64_t n = logits.size(0), v = logits.size(1), nr = runs.size(0);
    const T *px = logits.data<T>(), *pm = row_max.data<T>();
    const int32_t *pt = local_target.data<int32_t>(), *pr = runs.data<int32_t>();
    T *ps = sum_exp.data<T>(), *pl = target_logit.data<T>();
    parallel_for(n, grain(v), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        T s = 0;
        for (int64_t r = 0; r < nr; ++r)
          s += (ConstVectorMap<T>(px + i * v + pr[2 * r], pr[2 * r + 1] - pr[2 * r]) - pm[i]).exp().sum();
        ps[i] = s;
        pl[i] = pt[i] >= 0 ? px[i * v + pt[i]] : T(0);
      }
    });
  });
}

void sharded_ce_combine(const Tensor& gathered, Tensor& row_max, Tensor& sum_exp, Tensor& target_logit) {
  detail::dispatch_float(gathered.dtype(), "cross-entropy combine", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = row_max.size(0), ranks = gathered.size(0) / 3;
    const T* pg = gathered.data<T>();
    T *pm = row_max.data<T>(), *ps = sum_exp.data<T>(), *pt = target_logit.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t r = 0; r < ranks; ++r) m = std::max(m, pg[3 * r * n + i]);
      double s = 0, t = 0;
      for (int64_t r = 0; r < ranks; ++r) {
        const T mr = pg[3 * r * n + i];
        if (mr != -std::numeric_limits<T>::infinity())
          s += static_cast<double>(pg[(3 * r + 1) * n + i]) * std::exp(static_cast<double>(mr) - static_cast<double>(m));
        t += static_cast<double>(pg[(3 * r + 2) * n + i]);
      }
      pm[i] = m;
      ps[i] = static_cast<T>(s);
      pt[i] = static_cast<T>(t);
    }
  });
}

void sharded_ce_loss(const Tensor& row_max, const Tensor& sum_exp, const Tensor& target_logit,
                     const Tensor& counted, int64_t count, Tensor& lse, Tensor& loss) {
  detail::dispatch_float(row_max.dtype(), "cross-entropy loss", [&](auto tag) {
    using T = decltype(tag);
    int64_t n = row_max.size(0);
    const T *pm = row_max.data<T>(), *ps = sum_exp.data<T>(), *pt = target_logit.data<T>(),
            *pc = counted.data<T>();
    T* pl = lse.data<T>();
    // One pass in row order, in f64: the loss does not depend on the thread count.
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      double l = static_cast<double>(pm[i]) + std::log(static_cast<double>(ps[i]));
      pl[i] = static_cast<T>(l);
      if (pc[i] != T(0)) total += l - static_cast<double>(pt[i]);
    }
    loss.data<T>()[0] = static_cast<T>(count ? total / static_cast<double>(count) : 0.0);
  });
}

void sharded_ce_backward(const Tensor& logits, const Tensor& runs, const Tensor& local_target,
                         const Tensor& lse, const Tensor& counted, const Tensor& grad_loss,
                         int64_t count, Tensor& dlogits) {
  detail::dispatch_float(logits.dtype(), "cross-entropy backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = logits.size(0), v = logits.size(1), nr = runs.size(0);
    const T *px = logits.data<T>(), *pl = lse.data<T>(), *pc = counted.data<T>();
    const int32_t *pt = local_target.data<int32_t>(), *pr = runs.data<int32_t>();
    const T scale = static_cast<T>(count ? static_cast<double>(grad_loss.data<T>()[0]) / static_cast<double>(count) : 0.0);
    const bool whole_rows = nr == 1 && pr[0] == 0 && pr[1] == v;
    T* pd = dlogits.data<T>();
    parallel_for(n, grain(v), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        VectorMap<T> d(pd + i * v, v);
        T s = pc[i] * scale;
        if (s == T(0)) {  // an ignored row: its gradient is all zero
          d.setZero();
          continue;
        }
        if (!whole_rows) d.setZero();  // the padded columns
        for (int64_t r = 0; r < nr; ++r) {
          int64_t b = pr[2 * r], len = pr[2 * r + 1] - b;
          d.segment(b, len) = s * (ConstVectorMap<T>(px + i * v + b, len) - pl[i]).exp();
        }
        if (pt[i] >= 0) d[pt[i]] -= s;
      }
    });
  });
}

}  // namespace flextp::cpu

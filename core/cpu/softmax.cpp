#include "core/ops/softmax.h"

#include <algorithm>
#include <cmath>

#include "core/cpu/eigen.h"
#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {

void softmax_forward(const Tensor& x, Tensor& y) {
  detail::dispatch_float(x.dtype(), "softmax", [&](auto tag) {
    using T = decltype(tag);
    int64_t c = x.size(-1), rows = x.numel() / c;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(rows, std::max<int64_t>(1, 4096 / c), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        ConstVectorMap<T> in(px + r * c, c);
        VectorMap<T> out(py + r * c, c);
        out = (in - in.maxCoeff()).exp();
        out *= T(1) / out.sum();
      }
    });
  });
}

void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  detail::dispatch_float(y.dtype(), "softmax backward", [&](auto tag) {
    using T = decltype(tag);
    int64_t c = y.size(-1), rows = y.numel() / c;
    const T* py = y.data<T>();
    const T* pg = dy.data<T>();
    T* pd = dx.data<T>();
    parallel_for(rows, std::max<int64_t>(1, 4096 / c), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const T* yr = py + r * c;
        const T* gr = pg + r * c;
        T dot = 0;
        for (int64_t j = 0; j < c; ++j) dot += yr[j] * gr[j];
        for (int64_t j = 0; j < c; ++j) pd[r * c + j] = yr[j] * (gr[j] - dot);
      }
    });
  });
}

}  // namespace flextp::cpu

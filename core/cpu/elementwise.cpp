#include "core/ops/elementwise.h"

#include "core/cpu/eigen.h"
#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {
namespace {

constexpr int64_t kGrain = 1 << 15;

template <BinaryOp Op, typename T>
T apply(T a, T b) {
  if constexpr (Op == BinaryOp::Add) return a + b;
  if constexpr (Op == BinaryOp::Mul) return a * b;
}

// The op is a template argument so that the loops below vectorise (a switch on it per element
// kept GCC from doing so: these passes were 9% of the default model's step).
template <BinaryOp Op, typename T>
void binary_impl(const Tensor& a, const Tensor& b, Tensor& out) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  int64_t n = out.numel();
  if (a.numel() == n && b.numel() == n) {
    parallel_for(n, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) po[i] = apply<Op>(pa[i], pb[i]);
    });
  } else if (a.numel() == n) {  // x op bias (the op checked that b repeats along x's leading dimensions)
    int64_t m = b.numel();
    parallel_for(m ? n / m : 0, kGrain / (m + 1) + 1, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r)
        for (int64_t j = 0; j < m; ++j) po[r * m + j] = apply<Op>(pa[r * m + j], pb[j]);
    });
  } else {  // bias op x (the op checked that a repeats along x's leading dimensions)
    int64_t m = a.numel();
    parallel_for(m ? n / m : 0, kGrain / (m + 1) + 1, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r)
        for (int64_t j = 0; j < m; ++j) po[r * m + j] = apply<Op>(pa[j], pb[r * m + j]);
    });
  }
}

}  // namespace

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  detail::dispatch_float(out.dtype(), "binary op", [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case BinaryOp::Add: return binary_impl<BinaryOp::Add, T>(a, b, out);
      case BinaryOp::Mul: return binary_impl<BinaryOp::Mul, T>(a, b, out);
    }
  });
}

void scale(const Tensor& x, double s, Tensor& out) {
  detail::dispatch_float(x.dtype(), "scale", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    T ts = static_cast<T>(s);
    parallel_for(x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) po[i] = px[i] * ts;
    });
  });
}

void axpy(Tensor& dst, const Tensor& src, double alpha) {
  detail::dispatch_float(dst.dtype(), "add_inplace", [&](auto tag) {
    using T = decltype(tag);
    T* pd = dst.data<T>();
    const T* ps = src.data<T>();
    T a = static_cast<T>(alpha);
    parallel_for(dst.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      if (alpha == 1.0)
        for (int64_t i = lo; i < hi; ++i) pd[i] += ps[i];
      else
        for (int64_t i = lo; i < hi; ++i) pd[i] += a * ps[i];
    });
  });
}

void sum_to(const Tensor& g, Tensor& out) {
  detail::dispatch_float(g.dtype(), "sum_to_shape", [&](auto tag) {
    using T = decltype(tag);
    const T* pg = g.data<T>();
    T* po = out.data<T>();
    int64_t n = g.numel(), m = out.numel();  // a bias gradient: the sums of the rows' columns
    auto rows = matrix(pg, m ? n / m : 0, m, m);
    Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(po, m) = rows.colwise().sum();
  });
}

}  // namespace flextp::cpu

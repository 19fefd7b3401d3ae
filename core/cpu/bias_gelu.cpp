#include <algorithm>

#include "core/cpu/map_elementwise.h"
#include "core/ops/bias_gelu.h"

namespace flextp::cpu {
namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;

// GELU's tanh form, 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), and its derivative.
// Eigen's array tanh is vectorised (a rational approximation accurate to a few ulp in float).
template <typename Out, typename V>
void gelu_values(Out& out, const V& v) {
  using T = typename V::Scalar;
  auto u = T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v);
  out = T(0.5) * v * (T(1) + u.tanh());
}

template <typename Out, typename V, typename G>
void gelu_grads(Out& out, const V& v, const G& g) {
  using T = typename V::Scalar;
  Eigen::Array<T, Eigen::Dynamic, 1> t = (T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v)).tanh();
  auto du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
  out = g * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
}

// Row by row over x [rows, m]: v = x_row + bias into a row buffer (in L1), then the formula on it;
// `write(out_row, v, row)` writes the row's result.
template <typename T, typename Write>
void over_biased_rows(const Tensor& x, const Tensor& bias, Write&& write) {
  int64_t m = bias.numel(), rows = m ? x.numel() / m : 0;
  const T* px = x.data<T>();
  ConstVectorMap<T> b(bias.data<T>(), m);
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(m, 1)), [&](int64_t lo, int64_t hi) {
    Eigen::Array<T, Eigen::Dynamic, 1> v(m);
    for (int64_t r = lo; r < hi; ++r) {
      v = ConstVectorMap<T>(px + r * m, m) + b;
      write(v, r * m);
    }
  });
}
}  // namespace

void bias_gelu_forward(const Tensor& x, const Tensor& bias, Tensor& y) {
  detail::dispatch_float(x.dtype(), "bias_gelu", [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    int64_t m = bias.numel();
    over_biased_rows<T>(x, bias, [&](const auto& v, int64_t at) {
      VectorMap<T> out(py + at, m);
      gelu_values(out, v);
    });
  });
}

void bias_gelu_backward(const Tensor& x, const Tensor& bias, const Tensor& dy, Tensor& dx) {
  detail::dispatch_float(x.dtype(), "bias_gelu backward", [&](auto tag) {
    using T = decltype(tag);
    const T* pg = dy.data<T>();
    T* pd = dx.data<T>();
    int64_t m = bias.numel();
    over_biased_rows<T>(x, bias, [&](const auto& v, int64_t at) {
      VectorMap<T> out(pd + at, m);
      gelu_grads(out, v, ConstVectorMap<T>(pg + at, m));
    });
  });
}

}  // namespace flextp::cpu

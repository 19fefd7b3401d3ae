#include "core/ops/gelu.h"

#include <type_traits>

#include "core/cpu/map_elementwise.h"

namespace flextp::cpu {
namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
}  // namespace

// Eigen's array tanh is vectorised (a rational approximation accurate to a few ulp in float).
void gelu_forward(const Tensor& x, Tensor& y) {
  map_elementwise("gelu", x, y, [](auto& out, const auto& v) {
    using T = typename std::decay_t<decltype(v)>::Scalar;
    auto u = T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v);
    out = T(0.5) * v * (T(1) + u.tanh());
  });
}

void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  map_elementwise("gelu backward", x, dy, dx, [](auto& out, const auto& v, const auto& g) {
    using T = typename std::decay_t<decltype(v)>::Scalar;
    Eigen::Array<T, Eigen::Dynamic, 1> t = (T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v)).tanh();
    auto du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
    out = g * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
  });
}

}  // namespace flextp::cpu

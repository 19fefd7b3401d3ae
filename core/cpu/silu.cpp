#include "core/ops/silu.h"

#include <type_traits>

#include "core/cpu/map_elementwise.h"

namespace flextp::cpu {

// sigmoid(x) = 1 / (1 + exp(-x)): exp(-x) overflows to inf for x below about -88 (f32), which
// gives sigmoid 0 and silu -0, the right limit; no NaN arises.
void silu_forward(const Tensor& x, Tensor& y) {
  map_elementwise("silu", x, y, [](auto& out, const auto& v) {
    using T = typename std::decay_t<decltype(v)>::Scalar;
    out = v / (T(1) + (-v).exp());
  });
}

// d/dx x s(x) = s(x) (1 + x (1 - s(x))).
void silu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  map_elementwise("silu backward", x, dy, dx, [](auto& out, const auto& v, const auto& g) {
    using T = typename std::decay_t<decltype(v)>::Scalar;
    Eigen::Array<T, Eigen::Dynamic, 1> s = T(1) / (T(1) + (-v).exp());
    out = g * s * (T(1) + v * (T(1) - s));
  });
}

}  // namespace flextp::cpu

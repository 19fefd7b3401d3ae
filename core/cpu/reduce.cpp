#include "core/ops/reduce.h"

#include "core/cpu/eigen.h"
#include "core/dispatch.h"

namespace flextp::cpu {

void sum_all(const Tensor& x, Tensor& out) {
  detail::dispatch_float(x.dtype(), "sum", [&](auto tag) {
    using T = decltype(tag);
    // Accumulate in double: a loss summed over many tokens should not lose digits.
    out.data<T>()[0] = static_cast<T>(flat<T>(x).template cast<double>().sum());
  });
}

void sum_squares_all(const Tensor& x, Tensor& out) {
  detail::dispatch_float(x.dtype(), "sum_squares", [&](auto tag) {
    using T = decltype(tag);
    // The same expression as sum_all over mul's result (squares rounded to T, then summed in
    // double): Eigen reduces both in the same order, so the two give the same bits.
    auto v = flat<T>(x);
    out.data<T>()[0] = static_cast<T>((v * v).template cast<double>().sum());
  });
}

}  // namespace flextp::cpu

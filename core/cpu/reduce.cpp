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

}  // namespace flextp::cpu

#include "core/ops/reduce.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/ops/elementwise.h"

namespace flextp {

Tensor sum(const Tensor& x) {
  Tensor out = Tensor::empty({}, x.dtype(), x.device());
  FLEXTP_DISPATCH(x.device(), sum_all, x, out);
  Shape shape = x.shape();
  record("sum", out, {x}, [shape](const Tensor& g, const std::vector<bool>&) {
    // d sum / dx = 1 everywhere: the scalar gradient, broadcast.
    return std::vector<Tensor>{Tensor::full(shape, g.item(), g.dtype(), g.device())};
  });
  return out;
}

Tensor sum_squares(const Tensor& x) {
  if (!x.device().is_cpu()) {
    NoGradGuard ng;
    return sum(mul(x, x));
  }
  Tensor out = Tensor::empty({}, x.dtype(), x.device());
  cpu::sum_squares_all(x, out);
  return out;
}

}  // namespace flextp

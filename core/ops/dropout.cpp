#include "core/ops/dropout.h"

#include "core/autograd.h"
#include "core/dispatch.h"

namespace flextp {

Tensor dropout(const Tensor& x, double p, uint64_t seed, uint64_t stream, uint64_t first) {
  FLEXTP_CHECK(p >= 0 && p < 1, "dropout probability must be in [0, 1), got ", p);
  if (p == 0) return x;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  FLEXTP_DISPATCH(x.device(), dropout_apply, x, p, seed, stream, first, y);
  record("dropout", y, {x}, [p, seed, stream, first](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(g.shape(), g.dtype(), g.device());
    FLEXTP_DISPATCH(g.device(), dropout_apply, g, p, seed, stream, first, dx);
    return std::vector<Tensor>{dx};
  });
  return y;
}

}  // namespace flextp

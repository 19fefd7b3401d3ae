#include "core/ops/silu.h"

#include "core/autograd.h"
#include "core/dispatch.h"

namespace flextp {

Tensor silu(const Tensor& x) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  FLEXTP_DISPATCH(x.device(), silu_forward, x, y);
  Tensor xd = x.detach();
  record("silu", y, {x}, [xd](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
    FLEXTP_DISPATCH(xd.device(), silu_backward, xd, g, dx);
    return std::vector<Tensor>{dx};
  });
  return y;
}

}  // namespace flextp

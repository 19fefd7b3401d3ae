#include "core/ops/softmax.h"

#include "core/autograd.h"
#include "core/dispatch.h"

namespace flextp {

Tensor softmax(const Tensor& x) {
  FLEXTP_CHECK(x.ndim() >= 1 && x.size(-1) > 0, "softmax needs a non-empty last dimension, got ",
               x.str());
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  FLEXTP_DISPATCH(x.device(), softmax_forward, x, y);
  Tensor yd = y.detach();
  record("softmax", y, {x}, [yd](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(yd.shape(), yd.dtype(), yd.device());
    FLEXTP_DISPATCH(yd.device(), softmax_backward, yd, g, dx);
    return std::vector<Tensor>{dx};
  });
  return y;
}

}  // namespace flextp

#include "core/ops/bias_gelu.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/ops/elementwise.h"

namespace flextp {

Tensor bias_gelu(const Tensor& x, const Tensor& bias) {
  FLEXTP_CHECK(x.ndim() >= 1 && bias.shape() == Shape{x.size(-1)}, "bias_gelu: input ", x.str(),
               " needs a bias of shape [", x.ndim() >= 1 ? x.size(-1) : 0, "], got ", bias.str());
  detail::check_same_device("bias_gelu", x, bias);
  detail::check_same_dtype("bias_gelu", x, bias);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  FLEXTP_DISPATCH(x.device(), bias_gelu_forward, x, bias, y);
  Tensor xd = x.detach(), bd = bias.detach();
  record("bias_gelu", y, {x, bias}, [xd, bd](const Tensor& g, const std::vector<bool>& needs) {
    Tensor dx = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
    FLEXTP_DISPATCH(xd.device(), bias_gelu_backward, xd, bd, g, dx);
    // The bias gradient sums dx's rows as add's backward does (sum_to_shape), in the same order.
    return std::vector<Tensor>{dx, needs[1] ? sum_to_shape(dx, bd.shape()) : Tensor()};
  });
  return y;
}

}  // namespace flextp

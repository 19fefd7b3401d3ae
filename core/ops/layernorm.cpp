#include "core/ops/layernorm.h"

#include "core/autograd.h"
#include "core/dispatch.h"

namespace flextp {

Tensor layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  FLEXTP_CHECK(x.ndim() >= 1, "layernorm of a scalar");
  int64_t c = x.size(-1);
  FLEXTP_CHECK(weight.shape() == Shape{c} && bias.shape() == Shape{c}, "layernorm: input ",
               x.str(), " needs weight and bias of shape [", c, "], got ", weight.str(), " and ",
               bias.str());
  detail::check_same_device("layernorm", x, weight);
  detail::check_same_device("layernorm", x, bias);
  detail::check_same_dtype("layernorm", x, weight);
  detail::check_same_dtype("layernorm", x, bias);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({x.numel() / c}, x.dtype(), x.device());
  Tensor rstd = Tensor::empty({x.numel() / c}, x.dtype(), x.device());
  FLEXTP_DISPATCH(x.device(), layernorm_forward, x, weight, bias, eps, y, mean, rstd);
  Tensor xd = x.detach(), wd = weight.detach();
  record("layernorm", y, {x, weight, bias},
         [xd, wd, mean, rstd](const Tensor& g, const std::vector<bool>&) {
           Tensor dx = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
           Tensor dw = Tensor::empty(wd.shape(), wd.dtype(), wd.device());
           Tensor db = Tensor::empty(wd.shape(), wd.dtype(), wd.device());
           FLEXTP_DISPATCH(xd.device(), layernorm_backward, xd, wd, mean, rstd, g, dx, dw, db);
           return std::vector<Tensor>{dx, dw, db};
         });
  return y;
}

}  // namespace flextp

#include "core/ops/layernorm.h"

#include "core/autograd.h"
#include "core/dispatch.h"

namespace flextp {

namespace {

void check_layernorm_args(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  FLEXTP_CHECK(x.ndim() >= 1, "layernorm of a scalar");
  int64_t c = x.size(-1);
  FLEXTP_CHECK(weight.shape() == Shape{c} && bias.shape() == Shape{c}, "layernorm: input ",
               x.str(), " needs weight and bias of shape [", c, "], got ", weight.str(), " and ",
               bias.str());
  detail::check_same_device("layernorm", x, weight);
  detail::check_same_device("layernorm", x, bias);
  detail::check_same_dtype("layernorm", x, weight);
  detail::check_same_dtype("layernorm", x, bias);
}

// y = layernorm(x, weight, bias) computed by the caller, with its row statistics: the graph node.
void record_layernorm(Tensor& y, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& mean,
                      const Tensor& rstd) {
  Tensor xd = x.detach(), wd = weight.detach();
  record("layernorm", y, {x, weight, bias},
         [xd, wd, mean, rstd](const Tensor& g, const std::vector<bool>&) {
           Tensor dx = Tensor::empty(xd.shape(), xd.dtype(), xd.device());
           Tensor dw = Tensor::empty(wd.shape(), wd.dtype(), wd.device());
           Tensor db = Tensor::empty(wd.shape(), wd.dtype(), wd.device());
           FLEXTP_DISPATCH(xd.device(), layernorm_backward, xd, wd, mean, rstd, g, dx, dw, db);
           return std::vector<Tensor>{dx, dw, db};
         });
}

}  // namespace

Tensor layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  check_layernorm_args(x, weight, bias);
  int64_t c = x.size(-1);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({x.numel() / c}, x.dtype(), x.device());
  Tensor rstd = Tensor::empty({x.numel() / c}, x.dtype(), x.device());
  FLEXTP_DISPATCH(x.device(), layernorm_forward, x, weight, bias, eps, y, mean, rstd);
  record_layernorm(y, x, weight, bias, mean, rstd);
  return y;
}

Tensor add_layernorm(const Tensor& x, const Tensor& residual, const Tensor& weight, const Tensor& bias,
                     Tensor& sum, double eps) {
  check_layernorm_args(x, weight, bias);
  FLEXTP_CHECK(residual.shape() == x.shape(), "add_layernorm: the residual ", residual.str(),
               " must have the input's shape ", x.str());
  detail::check_same_device("add_layernorm", x, residual);
  detail::check_same_dtype("add_layernorm", x, residual);
  int64_t c = x.size(-1);
  sum = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({x.numel() / c}, x.dtype(), x.device());
  Tensor rstd = Tensor::empty({x.numel() / c}, x.dtype(), x.device());
  FLEXTP_DISPATCH(x.device(), add_layernorm_forward, x, residual, weight, bias, eps, sum, y, mean, rstd);
  // The add's node (its gradient passes to both inputs), then the LayerNorm's on the sum.
  record("add", sum, {x, residual},
         [](const Tensor& g, const std::vector<bool>&) { return std::vector<Tensor>{g, g}; });
  record_layernorm(y, sum, weight, bias, mean, rstd);
  return y;
}

}  // namespace flextp

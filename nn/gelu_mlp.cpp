#include "nn/gelu_mlp.h"

#include "core/ops/bias_gelu.h"
#include "nn/unit_costs.h"

namespace flextp {

MlpRegistration gelu_mlp_registration() { return registration_of<GeluMlp>("gelu_new"); }

UnitGroup GeluMlp::unit_group(const GPTConfig& c, int64_t layer, const StepShape& s) {
  const double n = static_cast<double>(s.batch * s.seq_len), ch = static_cast<double>(c.n_embd);
  const double m = static_cast<double>(c.mlp_unit);
  // Forward + backward: three times the two matrix products; GELU is elementwise.
  double work = 3 * (2 * n * ch * m * 2) + kElementwiseFlops * 3 * n * m;
  double bytes = (m * ch + m + m * ch) * bytes_per_value(c, s);
  return mlp_unit_group(c, layer, {work, bytes});
}

GeluMlp::GeluMlp(const std::string& prefix, const GPTConfig& c, std::shared_ptr<const UnitGroup> group,
                 std::vector<int64_t> blocks, Communicator* comm)
    : Mlp(prefix),
      c_fc(add_module(std::make_unique<Linear>(child_prefix("c_fc"), mlp_column_spec(c, group, blocks), c.seed,
                                               c.dtype, comm))),
      c_proj(add_module(std::make_unique<Linear>(child_prefix("c_proj"), mlp_row_spec(c, group, blocks), c.seed,
                                                 c.dtype, comm))) {}

Tensor GeluMlp::forward(const Tensor& x) const {
  // c_fc's bias is added inside the GELU pass (core/ops/bias_gelu.h: one pass fewer).
  return c_proj.forward(bias_gelu(c_fc.forward_without_bias(x), c_fc.active_bias()));  // [B, T, C] -> [B, T, U*M] -> [B, T, C]
}

}  // namespace flextp

#include "nn/swiglu_mlp.h"

#include "core/ops/elementwise.h"
#include "core/ops/silu.h"
#include "nn/unit_costs.h"

namespace flextp {

// Not GPT-2: no activation_function for a GPT-2 export.
MlpRegistration swiglu_mlp_registration() { return registration_of<SwiGluMlp>(); }

UnitGroup SwiGluMlp::unit_group(const GPTConfig& c, int64_t layer, const StepShape& s) {
  const double n = static_cast<double>(s.batch * s.seq_len), ch = static_cast<double>(c.n_embd);
  const double m = static_cast<double>(c.mlp_unit);
  // Forward + backward: three times the three matrix products; SiLU and the product with the up
  // projection are elementwise, each about as dear as the GELU MLP's one.
  double work = 3 * (3 * n * ch * m * 2) + kElementwiseFlops * 2 * 3 * n * m;
  double bytes = (m * ch + m + m * ch + m + m * ch) * bytes_per_value(c, s);
  return mlp_unit_group(c, layer, {work, bytes});
}

SwiGluMlp::SwiGluMlp(const std::string& prefix, const GPTConfig& c, std::shared_ptr<const UnitGroup> group,
                     std::vector<int64_t> blocks, Communicator* comm)
    : Mlp(prefix),
      c_gate(add_module(std::make_unique<Linear>(child_prefix("c_gate"), mlp_column_spec(c, group, blocks), c.seed,
                                                 c.dtype, comm))),
      c_up(add_module(std::make_unique<Linear>(child_prefix("c_up"), mlp_column_spec(c, group, blocks), c.seed,
                                               c.dtype, comm))),
      c_proj(add_module(std::make_unique<Linear>(child_prefix("c_proj"), mlp_row_spec(c, group, blocks), c.seed,
                                                 c.dtype, comm))) {}

Tensor SwiGluMlp::forward(const Tensor& x) const {
  // [B, T, C] -> gate and up [B, T, U*M] -> [B, T, C]
  return c_proj.forward(mul(silu(c_gate.forward(x)), c_up.forward(x)));
}

}  // namespace flextp

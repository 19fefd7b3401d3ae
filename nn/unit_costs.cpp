#include "nn/unit_costs.h"

#include "nn/units.h"

namespace flextp {

ModelCosts gpt_model_costs(const GPTConfig& c, const StepShape& s) {
  ModelCosts costs;
  costs.groups = UnitRegistry(c, s).partition_groups();
  // LayerNorms, residual adds, biases, position embedding: done by every rank.
  const double n = static_cast<double>(s.batch * s.seq_len), ch = static_cast<double>(c.n_embd);
  costs.replicated_work = kElementwiseFlops * 3 * n * ch * (2 * c.n_layer + 1) * 4;
  return costs;
}

}  // namespace flextp

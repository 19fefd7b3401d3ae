#include "nn/unit_costs.h"

#include "nn/units.h"

namespace flextp {

UnitCosts gpt_unit_costs(const GPTConfig& c, int64_t batch, int64_t seq_len, int slots) {
  UnitCosts costs;
  UnitRegistry units(c, {batch, seq_len, slots});
  for (const auto& g : units.groups()) {
    costs.work[g->name] = g->cost.work;
    costs.bytes[g->name] = g->cost.bytes;
  }
  // LayerNorms, residual adds, biases, position embedding: done by every rank.
  const double n = static_cast<double>(batch * seq_len), ch = static_cast<double>(c.n_embd);
  costs.replicated_work = kElementwiseFlops * 3 * n * ch * (2 * c.n_layer + 1) * 4;
  return costs;
}

}  // namespace flextp

#pragma once
// The SwiGLU MLP (as in PaLM and LLaMA): c_proj(silu(c_gate(x)) * c_up(x)), the MLP kind
// "swiglu". Its units are blocks of mlp_unit hidden neurons, like the GELU MLP's: a block holds
// its rows of c_gate and c_up (column split, with their biases) and the same rows of c_proj (row
// split), so a block's gate, up and down rows always travel, resize and checkpoint together.
//
// Hidden size: 4C, as the GELU MLP's, not LLaMA's 8C/3. The width then depends on n_embd alone
// (not on --mlp-unit, which 8C/3 rounded to whole blocks would), so the two kinds have the same
// unit count, the same --tp-assign specs, and checkpoints whose shapes a resume with another
// --mlp-unit still matches. The price: 1.5x the GELU MLP's weights and work per block (three
// matrices instead of two); a comparison at equal parameters would set n_embd accordingly.
// Biases are kept (GPT-2's convention, and every Linear here has one).
#include <memory>

#include "nn/mlp.h"

namespace flextp {

class SwiGluMlp : public Mlp {
 public:
  // `blocks`: the units of `group` (this layer's neuron blocks) held here, in local order.
  SwiGluMlp(const std::string& prefix, const GPTConfig& c, std::shared_ptr<const UnitGroup> group,
            std::vector<int64_t> blocks, Communicator* comm);
  // The neuron blocks of block `layer` as a unit group, priced for steps of shape s.
  static UnitGroup unit_group(const GPTConfig& c, int64_t layer, const StepShape& s);
  Tensor forward(const Tensor& x) const override;  // [B, T, C] -> [B, T, C]

  Linear& c_gate;  // weight [U*M, C], bias [U*M]
  Linear& c_up;    // weight [U*M, C], bias [U*M]
  Linear& c_proj;  // weight [U*M, C], bias [C]
};

}  // namespace flextp

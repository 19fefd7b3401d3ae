#pragma once
// Causal self-attention with heads as tensor-parallel units. The QKV projection is column-split
// (each head's q, k, v rows together), the output projection row-split (that head's input rows).
#include <memory>

#include "nn/config.h"
#include "nn/linear.h"

namespace flextp {

class CausalSelfAttention : public Module {
 public:
  // `heads`: the units of `group` (this layer's heads) held here, in local order.
  CausalSelfAttention(const std::string& prefix, const GPTConfig& c,
                      std::shared_ptr<const UnitGroup> group, std::vector<int64_t> heads,
                      Communicator* comm);
  // The heads of block `layer` as a unit group, priced for steps of shape s.
  static UnitGroup unit_group(const GPTConfig& c, int64_t layer, const StepShape& s);
  Tensor forward(const Tensor& x) const;  // [B, T, C] -> [B, T, C]
  // The heads held here, in local order (the QKV weight's units).
  const std::vector<int64_t>& heads() const { return c_attn.weight.units; }
  // Heads in use: all but the ones priority resizing skips (the last of the local order).
  int64_t active_heads() const;
  Linear& c_attn;  // weight [U*3D, C], bias [U*3D]
  Linear& c_proj;  // weight [U*D, C], bias [C]
};

}  // namespace flextp

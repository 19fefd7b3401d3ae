#pragma once
// GPT-2's MLP (C -> 4C -> C with GELU), whose units are blocks of mlp_unit hidden neurons: the
// MLP kind "gelu" (nn/mlp_kinds.h), the default.
#include <memory>

#include "nn/mlp.h"

namespace flextp {

class GeluMlp : public Mlp {
 public:
  // `blocks`: the units of `group` (this layer's neuron blocks) held here, in local order.
  GeluMlp(const std::string& prefix, const GPTConfig& c, std::shared_ptr<const UnitGroup> group,
          std::vector<int64_t> blocks, Communicator* comm);
  // The neuron blocks of block `layer` as a unit group, priced for steps of shape s.
  static UnitGroup unit_group(const GPTConfig& c, int64_t layer, const StepShape& s);
  Tensor forward(const Tensor& x) const override;  // [B, T, C] -> [B, T, C]

  Linear& c_fc;    // weight [U*M, C], bias [U*M]
  Linear& c_proj;  // weight [U*M, C], bias [C]
};

}  // namespace flextp

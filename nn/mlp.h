#pragma once
// The MLP (C -> 4C -> C with GELU), whose units are blocks of mlp_unit hidden neurons.
#include "nn/config.h"
#include "nn/linear.h"

namespace flextp {

class MLP : public Module {
 public:
  MLP(const std::string& prefix, const GPTConfig& c, std::vector<int64_t> blocks,
      Communicator* comm);
  Tensor forward(const Tensor& x) const;  // [B, T, C] -> [B, T, C]
  const std::vector<int64_t>& blocks() const { return c_fc.weight.units; }

  Linear& c_fc;    // weight [U*M, C], bias [U*M]
  Linear& c_proj;  // weight [U*M, C], bias [C]
};

}  // namespace flextp

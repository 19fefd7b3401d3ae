#pragma once
// LayerNorm module: weight 1, bias 0, replicated on every rank, never weight-decayed.
#include "nn/module.h"

namespace flextp {

class LayerNorm : public Module {
 public:
  LayerNorm(const std::string& prefix, int64_t channels, DType dtype);
  Tensor forward(const Tensor& x) const;  // [..., C] -> [..., C]

  Parameter& weight;
  Parameter& bias;
};

}  // namespace flextp

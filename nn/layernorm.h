#pragma once
// LayerNorm module: weight 1, bias 0, replicated on every rank, never weight-decayed. Built from
// the GPTConfig, which it keeps, so that a layer-norm option is its config field and its use in
// layernorm.cpp (the builders, nn/block.cpp and nn/gpt.cpp, pass the config whole).
#include "nn/config.h"
#include "nn/module.h"

namespace flextp {

class LayerNorm : public Module {
 public:
  LayerNorm(const std::string& prefix, const GPTConfig& c);
  Tensor forward(const Tensor& x) const;  // [..., C] -> [..., C]

  Parameter& weight;
  Parameter& bias;
  const GPTConfig config;  // the model's: what forward reads of its options
};

}  // namespace flextp

#include "nn/layernorm.h"

#include "core/ops/layernorm.h"

namespace flextp {

LayerNorm::LayerNorm(const std::string& prefix, const GPTConfig& c)
    : Module(prefix),
      weight(add_parameter("weight", Tensor::ones({c.n_embd}, c.dtype), false)),
      bias(add_parameter("bias", Tensor::zeros({c.n_embd}, c.dtype), false)),
      config(c) {}

Tensor LayerNorm::forward(const Tensor& x) const { return layernorm(x, weight.value, bias.value); }

}  // namespace flextp

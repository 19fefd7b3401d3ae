#include "nn/layernorm.h"

#include "core/ops/layernorm.h"

namespace flextp {

LayerNorm::LayerNorm(const std::string& prefix, int64_t channels, DType dtype)
    : Module(prefix),
      weight(add_parameter("weight", Tensor::ones({channels}, dtype), false)),
      bias(add_parameter("bias", Tensor::zeros({channels}, dtype), false)) {}

Tensor LayerNorm::forward(const Tensor& x) const { return layernorm(x, weight.value, bias.value); }

}  // namespace flextp

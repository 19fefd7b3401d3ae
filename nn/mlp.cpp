#include "nn/mlp.h"

#include <cmath>

#include "core/ops/gelu.h"

namespace flextp {

MLP::MLP(const std::string& prefix, const GPTConfig& c, std::vector<int64_t> blocks,
         Communicator* comm)
    : Module(prefix),
      c_fc(add_module(std::make_unique<Linear>(
          child_prefix("c_fc"),
          LinearSpec{c.n_embd, c.mlp_hidden(), Split::Column, "mlp", prefix, c.mlp_unit, blocks, 0.02},
          c.seed, c.dtype, comm))),
      c_proj(add_module(std::make_unique<Linear>(
          child_prefix("c_proj"),
          LinearSpec{c.mlp_hidden(), c.n_embd, Split::Row, "mlp", prefix, c.mlp_unit, blocks,
                     0.02 / std::sqrt(2.0 * c.n_layer)},
          c.seed, c.dtype, comm))) {}

// The module prefix "h.3.mlp" is also the partition group of this layer's neuron blocks.
Tensor MLP::forward(const Tensor& x) const {
  return c_proj.forward(gelu(c_fc.forward(x)));  // [B, T, C] -> [B, T, U*M] -> [B, T, C]
}

}  // namespace flextp

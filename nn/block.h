#pragma once
// A transformer block, pre-LayerNorm: x + attn(ln_1(x)), then + mlp(ln_2(x)).
#include "nn/attention.h"
#include "nn/layernorm.h"
#include "nn/mlp.h"
#include "nn/units.h"

namespace flextp {

class Block : public Module {
 public:
  // Block `layer` of the model, holding these heads and MLP blocks (in local order).
  Block(int64_t layer, const GPTConfig& c, const UnitRegistry& units, std::vector<int64_t> heads,
        std::vector<int64_t> mlp_blocks, Communicator* comm);
  // x [B, T, C] -> [B, T, C]. Residual dropout with probability `dropout` (0: none), its masks
  // drawn from `dropout_seed` and a stream per block and branch (the same on every rank).
  // `dropout_first`: x's first element in the step's batch (core/ops/dropout.h).
  Tensor forward(const Tensor& x, double dropout, uint64_t dropout_seed, uint64_t dropout_first = 0) const;

  LayerNorm& ln_1;
  CausalSelfAttention& attn;
  LayerNorm& ln_2;
  Mlp& mlp;  // of the kind GPTConfig::mlp names

 private:
  uint64_t attn_stream_, mlp_stream_;  // the dropout streams of the two branches
};

}  // namespace flextp

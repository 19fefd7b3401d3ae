#pragma once
// A transformer block, pre-LayerNorm: x + attn(ln_1(x)), then + mlp(ln_2(x)).
#include "nn/attention.h"
#include "nn/layer_norm.h"
#include "nn/mlp_layer.h"
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

  // The same forward in three stages that end or begin at the two all-reduces, so that a caller
  // running several batch chunks computes one chunk while another's all-reduce is on its way
  // (GPT::set_tp_chunks): forward(x) = finish(h, start_mlp(x, start_attention(x), h)), with
  // the same values (the masks are those of forward with the same arguments).
  StartedReduce start_attention(const Tensor& x) const;
  // Waits for the attention's sum; h becomes x + the attention's output.
  StartedReduce start_mlp(const Tensor& x, StartedReduce& attention_sum, double dropout, uint64_t dropout_seed,
                          uint64_t dropout_first, Tensor& h) const;
  // Waits for the MLP's sum: the block's output.
  Tensor finish(const Tensor& h, StartedReduce& mlp_sum, double dropout, uint64_t dropout_seed,
                uint64_t dropout_first) const;

  // The row-split layers, which fill in for the units priority resizing skips.
  std::vector<Linear*> row_split_layers() const;

  LayerNorm& ln_1;
  CausalSelfAttention& attn;
  LayerNorm& ln_2;
  MlpLayer& mlp;  // of the kind GPTConfig::mlp names

 private:
  uint64_t attn_stream_, mlp_stream_;  // the dropout streams of the two branches
  Communicator* comm_;
};

}  // namespace flextp

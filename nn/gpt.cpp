#include "nn/gpt.h"

#include "core/ops/cross_entropy.h"
#include "core/ops/dropout.h"
#include "core/ops/elementwise.h"
#include "core/ops/embedding.h"
#include "core/ops/matmul.h"
#include "core/ops/shape_ops.h"
#include "core/random.h"
#include "nn/init.h"

namespace flextp {
namespace {
const GPTConfig& validated(const GPTConfig& c) {
  c.validate();
  return c;
}
}  // namespace

GPT::GPT(const GPTConfig& c, const LocalUnits& units, Communicator* comm)
    : Module(""),
      wte(add_parameter("wte.weight",
                        normal_unit_rows("wte.weight", validated(c).seed, units.vocab,
                                         c.vocab_unit, c.vocab_size, c.n_embd, 0.02, c.dtype),
                        true)),
      wpe(add_parameter("wpe.weight",
                        normal_unit_rows("wpe.weight", c.seed, {0}, c.n_positions,
                                         c.n_positions, c.n_embd, 0.01, c.dtype),
                        false)),
      config_(c),
      comm_(comm) {
  wte.unit_kind = "vocab";
  wte.unit_rows = c.vocab_unit;
  wte.logical_rows = c.vocab_size;
  wte.units = units.vocab;
  FLEXTP_CHECK(static_cast<int64_t>(units.heads.size()) == c.n_layer &&
                   static_cast<int64_t>(units.mlp.size()) == c.n_layer,
               "GPT: unit lists for ", units.heads.size(), " layers, config has ", c.n_layer);
  for (int64_t l = 0; l < c.n_layer; ++l)
    blocks_.push_back(&add_module(std::make_unique<Block>(
        "h." + std::to_string(l), c, units.heads[l], units.mlp[l], comm)));
  ln_f_ = &add_module(std::make_unique<LayerNorm>("ln_f", c.n_embd, c.dtype));
}

void GPT::check_ids(const Tensor& ids) const {
  FLEXTP_CHECK(ids.dtype() == DType::I32 && ids.ndim() == 2, "GPT: token ids must be i32 [B, T], got ",
               ids.str());
  FLEXTP_CHECK(ids.size(1) <= config_.n_positions, "GPT: sequence length ", ids.size(1),
               " exceeds n_positions ", config_.n_positions);
}

Tensor GPT::hidden(const Tensor& ids) const {
  check_ids(ids);
  int64_t t = ids.size(1);
  double p = training_ ? config_.dropout : 0.0;
  uint64_t seed = config_.seed ^ (step_ * 0x9E3779B97F4A7C15ull);
  Tensor x = add(embedding(ids, wte.value), slice_rows(wpe.value, 0, t));  // [B, T, C]
  x = dropout(x, p, seed, rng::stream_id("embedding"));
  for (const Block* b : blocks_) x = b->forward(x, p, seed);  // [B, T, C]
  return ln_f_->forward(x);                                    // [B, T, C]
}

Tensor GPT::logits(const Tensor& ids) const {
  return matmul(hidden(ids), wte.value, false, true);  // [B, T, V]
}

Tensor GPT::loss(const Tensor& ids, const Tensor& targets) const {
  FLEXTP_CHECK(targets.shape() == ids.shape(), "GPT: targets ", targets.str(),
               " must have the shape of ids ", ids.str());
  Tensor l = logits(ids);                                         // [B, T, V]
  int64_t n = ids.numel();
  return cross_entropy(reshape(l, {n, config_.vocab_size}), reshape(targets, {n}));
}

}  // namespace flextp

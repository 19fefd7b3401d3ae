#include "nn/gpt.h"

#include "core/ops/dropout.h"
#include "core/ops/elementwise.h"
#include "core/ops/matmul.h"
#include "core/ops/shape_ops.h"
#include "core/random.h"
#include "nn/init.h"
#include "nn/unit_costs.h"
#include "parallel/tp/tp_ops.h"
#include "parallel/tp/vocab_parallel.h"

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
                                         c.vocab_unit, c.padded_vocab(), c.n_embd, 0.02, c.dtype),
                        true)),
      wpe(add_parameter("wpe.weight",
                        normal_unit_rows("wpe.weight", c.seed, {0}, c.n_positions,
                                         c.n_positions, c.n_embd, 0.01, c.dtype),
                        false)),
      config_(c),
      units_(c),
      comm_(comm) {
  wte.layout = std::make_shared<const UnitLayout>(
      UnitLayout{units_.group(UnitKind::Vocab), c.vocab_unit, c.padded_vocab(), HfLayout::AsIs});
  wte.units = units.vocab;
  // The padded rows start and stay zero: no id looks them up and their logits are masked out
  // of the loss, so their gradient is zero and weight decay keeps them at zero.
  const VocabLayout layout = vocab_layout();
  const std::vector<int64_t>& rows = layout.global_ids();
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r] >= c.vocab_size) slice_rows(wte.value.detach(), static_cast<int64_t>(r), 1).zero_();
  FLEXTP_CHECK(static_cast<int64_t>(units.heads.size()) == c.n_layer &&
                   static_cast<int64_t>(units.mlp.size()) == c.n_layer,
               "GPT: unit lists for ", units.heads.size(), " layers, config has ", c.n_layer);
  for (int64_t l = 0; l < c.n_layer; ++l)
    blocks_.push_back(&add_module(std::make_unique<Block>(l, c, units_, units.heads[l], units.mlp[l], comm)));
  ln_f_ = &add_module(std::make_unique<LayerNorm>("ln_f", c));
}

Tensor GPT::hidden(const Tensor& ids) const {
  // ids may be on any device: they are mapped to local rows on the host anyway (vocab_parallel.h).
  FLEXTP_CHECK(ids.dtype() == DType::I32 && ids.ndim() == 2, "GPT: token ids must be i32 [B, T], got ",
               ids.str());
  FLEXTP_CHECK(ids.size(1) <= config_.n_positions, "GPT: sequence length ", ids.size(1),
               " exceeds n_positions ", config_.n_positions);
  int64_t t = ids.size(1);
  double p = training_ ? config_.dropout : 0.0;
  uint64_t seed = config_.seed ^ (step_ * 0x9E3779B97F4A7C15ull);
  Tensor tok = vocab_parallel_embedding(ids, wte.value, vocab_layout(), comm_);  // [B, T, C]
  Tensor x = add(tok, slice_rows(wpe.value, 0, t));                              // [B, T, C]
  uint64_t first = first_window_ * static_cast<uint64_t>(t * config_.n_embd);  // x[0] in the whole batch's [B, T, C]
  x = dropout(x, p, seed, rng::stream_id("embedding"), first);
  for (const Block* b : blocks_) x = b->forward(x, p, seed, first);  // [B, T, C]
  return ln_f_->forward(x);                                          // [B, T, C]
}

UnitGroup GPT::vocab_unit_group(const GPTConfig& c, const StepShape& s) {
  const double n = static_cast<double>(s.batch * s.seq_len), ch = static_cast<double>(c.n_embd);
  const double v = static_cast<double>(c.vocab_unit);
  // Forward + backward of the LM head's product, and the softmax over the block's logits.
  double work = 3 * (2 * n * ch * v) + kElementwiseFlops * 3 * n * v;
  double bytes = v * ch * bytes_per_value(c, s);
  return {"vocab", UnitKind::Vocab, -1, c.n_vocab_units(), c.vocab_unit, false, {work, bytes}};
}

VocabLayout GPT::vocab_layout() const {
  return VocabLayout(wte.units, config_.vocab_unit, config_.vocab_size, config_.padded_vocab());
}

Tensor GPT::local_logits(const Tensor& ids) const {
  // The tied LM head is column-split like the embedding: this rank's vocabulary rows only.
  Tensor x = copy_to_tensor_parallel(hidden(ids), comm_);      // [B, T, C]
  return matmul(x, wte.value, false, true, numerics().matmul);  // [B, T, Vl]
}

Tensor GPT::logits(const Tensor& ids) const {
  Tensor l = local_logits(ids);  // [B, T, Vl]
  int64_t n = ids.numel();
  Tensor all = gather_vocab_logits(reshape(l, {n, l.size(-1)}), vocab_layout(), comm_);  // [N, V]
  return reshape(all, {ids.size(0), ids.size(1), config_.vocab_size});                  // [B, T, V]
}

Tensor GPT::loss(const Tensor& ids, const Tensor& targets) const {
  FLEXTP_CHECK(targets.shape() == ids.shape(), "GPT: targets ", targets.str(),
               " must have the shape of ids ", ids.str());
  Tensor l = local_logits(ids);  // [B, T, Vl]
  int64_t n = ids.numel();
  return vocab_parallel_cross_entropy(reshape(l, {n, l.size(-1)}), reshape(targets, {n}),
                                      vocab_layout(), comm_);
}

}  // namespace flextp

#pragma once
// The GPT model. Glossary of shape letters: B batch, T sequence, C channels (n_embd), V
// vocabulary, H heads, D head size, U units held by this rank, M neurons per MLP unit.
//
//   ids [B, T] -> wte[ids] + wpe[0..T)                 [B, T, C]
//              -> n_layer x Block                      [B, T, C]
//              -> ln_f -> x wte^T (the tied LM head)   [B, T, Vp]
//              -> cross-entropy with targets [B, T]    scalar
// wte has Vp = GPTConfig::padded_vocab() rows (V rounded up to a multiple of 128, so that the
// LM-head GEMMs are aligned); the rows from V on stay zero and the loss and sampling ignore them.
#include <vector>

#include "nn/block.h"
#include "nn/units.h"
#include "parallel/tp/vocab_parallel.h"

namespace flextp {

class GPT : public Module {
 public:
  explicit GPT(const GPTConfig& config, const LocalUnits& units, Communicator* comm = nullptr);
  explicit GPT(const GPTConfig& config) : GPT(config, LocalUnits::all(config)) {}

  // Mean cross-entropy of predicting targets [B, T] from ids [B, T] (i32).
  Tensor loss(const Tensor& ids, const Tensor& targets) const;
  // All logits [B, T, V] of the real ids for ids [B, T], gathered from every rank (for sampling;
  // no gradient).
  Tensor logits(const Tensor& ids) const;
  // This rank's logits [B, T, Vl]: its vocabulary rows, in local order, padded rows included.
  Tensor local_logits(const Tensor& ids) const;
  VocabLayout vocab_layout() const;

  // Dropout is active only in training mode, with masks that change with the step. The batches
  // that follow are the step's windows from `first_window` on: they drop what the step's whole
  // batch would drop in those windows, so the masks do not depend on how a step's windows are
  // cut into micro-steps and shared among replicas.
  void set_training(bool training) { training_ = training; }
  void set_step(uint64_t step, uint64_t first_window = 0) { step_ = step, first_window_ = first_window; }
  const GPTConfig& config() const { return config_; }
  const std::vector<Block*>& blocks() const { return blocks_; }
  // The model's unit groups (the parameters with units point into it).
  const UnitRegistry& units() const { return units_; }
  // The vocabulary blocks (token embedding and tied LM head) as a unit group, priced for steps
  // of shape s.
  static UnitGroup vocab_unit_group(const GPTConfig& c, const StepShape& s);

  Parameter& wte;  // [Vp, C] token embedding, also the LM head (this rank's rows)
  Parameter& wpe;  // [n_positions, C] position embedding

 private:
  Tensor hidden(const Tensor& ids) const;  // [B, T, C] after ln_f

  GPTConfig config_;
  UnitRegistry units_;
  std::vector<Block*> blocks_;
  LayerNorm* ln_f_ = nullptr;
  Communicator* comm_;
  bool training_ = true;
  uint64_t step_ = 0, first_window_ = 0;
};

}  // namespace flextp

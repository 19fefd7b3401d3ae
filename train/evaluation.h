#pragma once
// Evaluating the model: the mean loss over the first windows of a token stream, during training
// (the validation loss every --eval-every steps and at the last) and alone (--eval-only).
#include <cstdint>
#include <functional>
#include <vector>

#include "nn/gpt.h"
#include "train/corpus.h"
#include "train/options.h"

namespace flextp {

class Validation {
 public:
  // Over the first --eval-batches x --batch windows of `tokens` (all of them when fewer), `batch`
  // at a time; none when `tokens` is empty.
  Validation(GPT& model, const std::vector<int32_t>& tokens, const TrainOptions& o, int64_t batch);
  bool due(int64_t step, bool last) const;
  double loss(const std::function<void()>& after_batch) const;

 private:
  GPT& model_;
  const std::vector<int32_t>& tokens_;
  int64_t seq_len_, every_, windows_, batch_;
};

// --eval-only: prints the loss of the loaded checkpoint on the whole of --data (no split), in
// windows from the file's start; returns the exit status.
int evaluate_checkpoint(const TrainOptions& o, GPT& model, const Corpus& corpus, bool lead);

}  // namespace flextp

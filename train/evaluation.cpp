#include "train/evaluation.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "core/autograd.h"
#include "core/shape.h"
#include "core/text_fields.h"
#include "data/batches.h"

namespace flextp {

namespace {

int64_t eval_window_count(const std::vector<int32_t>& tokens, const TrainOptions& o, const char* what) {
  int64_t available = eval_windows(tokens, o.data.seq_len);
  FLEXTP_CHECK(available > 0, what, " has ", tokens.size(), " tokens, fewer than seq_len + 1 = ",
               o.data.seq_len + 1);
  std::optional<int64_t> asked = checked_mul(o.output.eval_batches, o.data.batch);  // past 64 bits: all of them
  return asked ? std::min(available, *asked) : available;
}

// Mean cross-entropy over the first `windows` non-overlapping windows of the stream, in order,
// `batch` windows at a time. `after_batch` runs after each batch (the watchdog's beat: an
// evaluation may outlast a step).
double evaluate(GPT& model, const std::vector<int32_t>& tokens, int64_t seq_len, int64_t windows, int64_t batch,
                const std::function<void()>& after_batch = [] {}) {
  NoGradGuard ng;
  model.set_training(false);
  double total = 0;
  for (int64_t first = 0; first < windows; first += batch) {
    int64_t count = std::min(batch, windows - first);
    Batch b = eval_batch(tokens, seq_len, first, count);
    total += model.loss(b.ids, b.targets).item() * static_cast<double>(count);
    after_batch();
  }
  model.set_training(true);
  return total / static_cast<double>(windows);
}

}  // namespace

Validation::Validation(GPT& model, const std::vector<int32_t>& tokens, const TrainOptions& o, int64_t batch)
    : model_(model), tokens_(tokens), seq_len_(o.data.seq_len), every_(o.output.eval_every),
      windows_(tokens.empty() ? 0 : eval_window_count(tokens, o, "the validation data")), batch_(batch) {}

bool Validation::due(int64_t step, bool last) const {
  return windows_ > 0 && ((every_ && step % every_ == 0) || last);
}

double Validation::loss(const std::function<void()>& after_batch) const {
  return evaluate(model_, tokens_, seq_len_, windows_, batch_, after_batch);
}

int evaluate_checkpoint(const TrainOptions& o, GPT& model, const Corpus& corpus, bool lead) {
  const std::string& load = o.checkpoint.load;
  FLEXTP_CHECK(!load.empty(), "--eval-only needs --load CHECKPOINT");
  int64_t windows = eval_window_count(corpus.all, o, "--data");
  double loss = evaluate(model, corpus.all, o.data.seq_len, windows, o.data.batch);
  if (lead)
    std::printf("eval %s: %lld windows of %lld tokens from the start of %s: loss %.6f\n", load.c_str(),
                (long long)windows, (long long)o.data.seq_len,
                o.data.data.empty() ? "the default corpus" : o.data.data.c_str(), loss);
  return 0;
}

}  // namespace flextp

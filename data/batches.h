#pragma once
// Batches of (ids, targets) windows from a token stream.
//  - Training: B random windows of T + 1 tokens per step. Window starts come from the
//    counter-based generator at (seed, step, b), so a step's batch depends on nothing but the
//    step number: resuming at step s continues exactly, with no loader state to save. Window b
//    of a step is the same whoever draws it, so data-parallel replicas each draw their own run
//    of the step's windows (at_step(step, first, count)) and together compute the same batch.
//  - Evaluation: windows in order without overlap from the stream's start; window w has inputs
//    tokens[w T, w T + T) and targets tokens[w T + 1, w T + T + 1).
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace flextp {

struct Batch {
  Tensor ids;      // i32 [B, T]
  Tensor targets;  // i32 [B, T]
};

// Splits by position: the first (1 - val_fraction) of the tokens train, the rest validate.
void split_tokens(const std::vector<int32_t>& all, double val_fraction, std::vector<int32_t>& train,
                  std::vector<int32_t>& val);

class BatchSampler {
 public:
  BatchSampler(const std::vector<int32_t>* tokens, int64_t batch, int64_t seq_len, uint64_t seed);
  // Windows [first, first + count) of step `step`'s batch of `batch` windows (all of it: 0, batch).
  Batch at_step(int64_t step, int64_t first, int64_t count) const;

 private:
  const std::vector<int32_t>* tokens_;
  int64_t batch_, seq_len_;
  uint64_t seed_;
};

// How many evaluation windows of seq_len fit in the stream.
int64_t eval_windows(const std::vector<int32_t>& tokens, int64_t seq_len);
// Windows [first, first + count) in order, stacked as one batch.
Batch eval_batch(const std::vector<int32_t>& tokens, int64_t seq_len, int64_t first, int64_t count);

}  // namespace flextp

#pragma once
// Gradient accumulation: a replica's windows of a step run in micro-steps of a few windows each
// (their activations are what fits in memory), and the gradients of the micro-steps add up in
// the parameters' .grad. The model's loss is the mean over the windows it is given; scaling each
// micro-step's loss by its windows / the step's windows over the whole job makes the sum over
// micro-steps and replicas (parallel/dp/gradient_sync.h) exactly the mean over the global batch.
#include <cstdint>
#include <functional>

#include "core/tensor.h"
#include "data/batches.h"

namespace flextp {

// The model's mean loss over these windows; `first`: the first one's place in the share (a model
// with dropout draws other masks for other windows from it).
using LossFn = std::function<Tensor(const Tensor& ids, const Tensor& targets, int64_t first)>;

// Forward and backward over `share` (this replica's windows) in micro-steps of `micro` windows
// (0: all at once); `global_windows`: the step's windows over all replicas. Returns the sum of
// the scaled micro-step losses (this replica's part of the global mean), or a non-finite value
// when a micro-step's loss is not finite (its backward, and those after it, are skipped).
double accumulate_gradients(const Batch& share, int64_t micro, int64_t global_windows, const LossFn& loss);

}  // namespace flextp

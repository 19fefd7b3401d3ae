#pragma once
// Global gradient-norm clipping. Under tensor parallelism the norm counts every unit once:
// split parameters' squares are summed over ranks, replicated ones taken once. With data
// parallelism (parallel/dp/gradient_sync.h) the replicas' gradients are summed first, so every
// replica holds the whole gradient and its tensor-parallel group's squares give the global norm.
#include <vector>

#include "core/parameter.h"

namespace flextp {

// This rank's sums of squared gradients: of its split parameters (to be summed over the
// tensor-parallel ranks) and of the replicated ones (the same on every rank, taken once).
struct GradSquares {
  double split = 0, replicated = 0;
};
GradSquares grad_squares(const std::vector<Parameter*>& params);
// The global norm from every rank's squares, `split` summed in rank order (the trainer gathers
// them with its other bookkeeping in one collective: train/trainer.cpp).
double norm_of(const std::vector<GradSquares>& ranks);
// Scales gradients whose global norm is `norm` so that it becomes at most max_norm.
void clip_to_norm(const std::vector<Parameter*>& params, double max_norm, double norm);

}  // namespace flextp

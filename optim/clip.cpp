#include "optim/clip.h"

#include <cmath>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/elementwise.h"
#include "core/ops/reduce.h"

namespace flextp {
GradSquares grad_squares(const std::vector<Parameter*>& params) {
  // Summed where the gradients live and read once: on a GPU one sync per step, not per parameter.
  NoGradGuard ng;
  Tensor split_sq, replicated_sq;
  for (Parameter* p : params) {
    Tensor g = p->grad();
    if (!g.defined()) continue;
    Tensor& acc = p->replicated() ? replicated_sq : split_sq;
    Tensor sq = sum_squares(g);  // one read of the gradient, no squared copy
    acc = acc.defined() ? add(acc, sq) : sq;
  }
  return {split_sq.defined() ? split_sq.item() : 0.0, replicated_sq.defined() ? replicated_sq.item() : 0.0};
}

double norm_of(const std::vector<GradSquares>& ranks) {
  FLEXTP_CHECK(!ranks.empty(), "a gradient norm needs the squares of at least one rank");
  double split = ranks[0].split;
  for (size_t r = 1; r < ranks.size(); ++r) split += ranks[r].split;
  return std::sqrt(split + ranks[0].replicated);
}

void clip_to_norm(const std::vector<Parameter*>& params, double max_norm, double norm) {
  if (max_norm > 0 && norm > max_norm && std::isfinite(norm)) {
    double s = max_norm / (norm + 1e-6);
    for (Parameter* p : params) {
      Tensor g = p->grad();
      if (!g.defined()) continue;
      scale_inplace(g, s);
    }
  }
}

}  // namespace flextp

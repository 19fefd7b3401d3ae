#include "optim/clip.h"

#include <cmath>

#include "core/autograd.h"
#include "core/ops/elementwise.h"
#include "core/ops/reduce.h"

namespace flextp {
double grad_norm(const std::vector<Parameter*>& params, Communicator* comm) {
  // Summed where the gradients live and read once: on a GPU one sync per step, not per parameter.
  NoGradGuard ng;
  Tensor split_sq, replicated_sq;
  for (Parameter* p : params) {
    Tensor g = p->grad();
    if (!g.defined()) continue;
    Tensor& acc = p->replicated() ? replicated_sq : split_sq;
    Tensor sq = sum(mul(g, g));
    acc = acc.defined() ? add(acc, sq) : sq;
  }
  double split = split_sq.defined() ? split_sq.item() : 0.0;
  double replicated = replicated_sq.defined() ? replicated_sq.item() : 0.0;
  if (comm && comm->size() > 1) {
    Tensor t = Tensor::from_vector<double>({split}, {1});
    comm->all_reduce(t);
    split = t.item();
  }
  return std::sqrt(split + replicated);
}

double clip_grad_norm(const std::vector<Parameter*>& params, double max_norm, Communicator* comm) {
  double norm = grad_norm(params, comm);
  clip_to_norm(params, max_norm, norm);
  return norm;
}

void clip_to_norm(const std::vector<Parameter*>& params, double max_norm, double norm) {
  if (max_norm > 0 && norm > max_norm && std::isfinite(norm)) {
    double s = max_norm / (norm + 1e-6);
    for (Parameter* p : params) {
      Tensor g = p->grad();
      if (!g.defined()) continue;
      Tensor scaled = scale(g, s);
      g.copy_from(scaled);
    }
  }
}

}  // namespace flextp

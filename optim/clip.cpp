#include "optim/clip.h"

#include <cmath>

#include "core/autograd.h"
#include "core/ops/elementwise.h"
#include "core/ops/reduce.h"

namespace flextp {
namespace {
double squared_norm(const Tensor& g) {
  NoGradGuard ng;
  return sum(mul(g, g)).item();
}
}  // namespace

double grad_norm(const std::vector<Parameter*>& params, Communicator* comm) {
  double split = 0, replicated = 0;
  for (Parameter* p : params) {
    Tensor g = p->grad();
    if (!g.defined()) continue;
    (p->replicated() ? replicated : split) += squared_norm(g);
  }
  if (comm && comm->size() > 1) {
    Tensor t = Tensor::from_vector<double>({split}, {1});
    comm->all_reduce(t);
    split = t.item();
  }
  return std::sqrt(split + replicated);
}

double clip_grad_norm(const std::vector<Parameter*>& params, double max_norm, Communicator* comm) {
  double norm = grad_norm(params, comm);
  if (max_norm > 0 && norm > max_norm && std::isfinite(norm)) {
    double s = max_norm / (norm + 1e-6);
    for (Parameter* p : params) {
      Tensor g = p->grad();
      if (!g.defined()) continue;
      Tensor scaled = scale(g, s);
      g.copy_from(scaled);
    }
  }
  return norm;
}

}  // namespace flextp

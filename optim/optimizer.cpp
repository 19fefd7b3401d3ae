#include "optim/optimizer.h"

#include "core/autograd.h"
#include "core/ops/adamw.h"
#include "core/ops/elementwise.h"

namespace flextp {

Tensor& Optimizer::slot(Parameter& p, const std::string& name) {
  auto it = p.state.find(name);
  if (it == p.state.end() || it->second.shape() != p.value.shape())
    it = p.state.insert_or_assign(name, Tensor::zeros(p.value.shape(), p.value.dtype(),
                                                      p.value.device())).first;
  return it->second;
}

void AdamW::step(const std::vector<Parameter*>& params, double lr) {
  NoGradGuard ng;
  ++steps_;
  for (Parameter* p : params) {
    Tensor g = p->grad();
    if (!g.defined()) continue;
    AdamWStep s{lr, o_.beta1, o_.beta2, o_.eps, p->weight_decay ? o_.weight_decay : 0.0, steps_};
    adamw_update(p->value, g, slot(*p, "m"), slot(*p, "v"), s);
  }
}

void SGD::step(const std::vector<Parameter*>& params, double lr) {
  NoGradGuard ng;
  ++steps_;
  for (Parameter* p : params) {
    Tensor g = p->grad();
    if (!g.defined()) continue;
    // buf = momentum * buf + g (+ wd * p); p -= lr * buf
    Tensor& buf = slot(*p, "momentum");
    Tensor scaled = scale(buf, o_.momentum);
    add_inplace(scaled, g);
    if (p->weight_decay && o_.weight_decay != 0) add_inplace(scaled, p->value, o_.weight_decay);
    buf.copy_from(scaled);
    add_inplace(p->value, buf, -lr);
  }
}

}  // namespace flextp

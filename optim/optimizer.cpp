#include "optim/optimizer.h"

#include "core/autograd.h"
#include "core/ops/adamw.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape_ops.h"

namespace flextp {

namespace {
// The rows an update touches: all, or only the active ones of a resized parameter (and then its
// extra_rows, updated apart: units another data-parallel replica computed).
Tensor active(const Parameter& p, const Tensor& t) {
  return p.resized() ? slice_rows(t, 0, p.active_rows) : t;
}
}  // namespace

void AdamW::step(const std::vector<Parameter*>& params, double lr) {
  NoGradGuard ng;
  ++steps_;
  for (Parameter* p : params) {
    Tensor g = p->grad();
    if (!g.defined()) continue;
    AdamWStep s{lr, o_.beta1, o_.beta2, o_.eps, p->weight_decay ? o_.weight_decay : 0.0, steps_};
    Tensor value = active(*p, p->value), m = active(*p, p->slot("m")), v = active(*p, p->slot("v"));
    adamw_update(value, active(*p, g), m, v, s);
    for (const auto& [first, rows] : p->extra_rows) {
      Tensor ev = slice_rows(p->value, first, rows), em = slice_rows(p->slot("m"), first, rows),
             evv = slice_rows(p->slot("v"), first, rows);
      adamw_update(ev, slice_rows(g, first, rows), em, evv, s);
    }
  }
}

void SGD::step(const std::vector<Parameter*>& params, double lr) {
  NoGradGuard ng;
  ++steps_;
  for (Parameter* p : params) {
    Tensor g = p->grad();
    if (!g.defined()) continue;
    // buf = momentum * buf + g (+ wd * p); p -= lr * buf
    Tensor buf = active(*p, p->slot("momentum")), value = active(*p, p->value);
    Tensor scaled = scale(buf, o_.momentum);
    add_inplace(scaled, active(*p, g));
    if (p->weight_decay && o_.weight_decay != 0) add_inplace(scaled, value, o_.weight_decay);
    buf.copy_from(scaled);
    add_inplace(value, buf, -lr);
    for (const auto& [first, rows] : p->extra_rows) {
      Tensor eb = slice_rows(p->slot("momentum"), first, rows), ev = slice_rows(p->value, first, rows);
      Tensor es = scale(eb, o_.momentum);
      add_inplace(es, slice_rows(g, first, rows));
      if (p->weight_decay && o_.weight_decay != 0) add_inplace(es, ev, o_.weight_decay);
      eb.copy_from(es);
      add_inplace(ev, eb, -lr);
    }
  }
}

}  // namespace flextp

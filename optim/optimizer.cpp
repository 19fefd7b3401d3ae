#include "optim/optimizer.h"

#include "core/autograd.h"
#include "core/ops/adamw.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape_ops.h"

namespace flextp {

namespace {
// Calls update(first, rows) for each run of rows an update touches: all, or only the active ones
// of a resized parameter, and then its extra_rows (units another data-parallel replica computed).
template <typename F>
void for_updated_rows(const Parameter& p, F&& update) {
  update(0, p.resized() ? p.active_rows : p.value.size(0));
  for (const auto& [first, rows] : p.extra_rows) update(first, rows);
}

// Rows [first, first + rows) of t: t itself when that is all of it (no view to make, every step,
// for the parameters that are not resized).
Tensor rows_of(const Tensor& t, int64_t first, int64_t rows) {
  return first == 0 && rows == t.size(0) ? t : slice_rows(t, first, rows);
}
}  // namespace

void AdamW::step(const std::vector<Parameter*>& params, double lr) {
  NoGradGuard ng;
  ++steps_;
  for (Parameter* p : params) {
    Tensor g = p->grad();
    if (!g.defined()) continue;
    AdamWStep s{lr, o_.beta1, o_.beta2, o_.eps, p->weight_decay ? o_.weight_decay : 0.0, steps_};
    for_updated_rows(*p, [&](int64_t first, int64_t rows) {
      Tensor value = rows_of(p->value, first, rows), m = rows_of(p->slot("m"), first, rows),
             v = rows_of(p->slot("v"), first, rows);
      adamw_update(value, rows_of(g, first, rows), m, v, s);
    });
  }
}

void SGD::step(const std::vector<Parameter*>& params, double lr) {
  NoGradGuard ng;
  ++steps_;
  for (Parameter* p : params) {
    Tensor g = p->grad();
    if (!g.defined()) continue;
    // buf = momentum * buf + g (+ wd * p); p -= lr * buf
    for_updated_rows(*p, [&](int64_t first, int64_t rows) {
      Tensor buf = rows_of(p->slot("momentum"), first, rows), value = rows_of(p->value, first, rows);
      Tensor scaled = scale(buf, o_.momentum);
      add_inplace(scaled, rows_of(g, first, rows));
      if (p->weight_decay && o_.weight_decay != 0) add_inplace(scaled, value, o_.weight_decay);
      buf.copy_from(scaled);
      add_inplace(value, buf, -lr);
    });
  }
}

}  // namespace flextp

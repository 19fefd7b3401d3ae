#include "parallel/balance/active_units.h"

#include <algorithm>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/shape_ops.h"
#include "parallel/tp/unit_rows.h"

namespace flextp {

std::vector<Parameter*> group_parameters(const std::vector<Parameter*>& params, const std::string& group) {
  std::vector<Parameter*> out;
  for (Parameter* p : params)
    if (!p->replicated() && p->group().name == group) out.push_back(p);
  return out;
}

void reorder_units(const std::vector<Parameter*>& group, const std::vector<int64_t>& units) {
  NoGradGuard ng;
  for (Parameter* p : group) {
    std::vector<int64_t> sorted_new = units, sorted_old = p->units;
    std::sort(sorted_new.begin(), sorted_new.end());
    std::sort(sorted_old.begin(), sorted_old.end());
    FLEXTP_CHECK(sorted_new == sorted_old, "reorder_units: the new order of ", p->name,
                 " is not a permutation of its units");
    std::vector<int64_t> offsets = local_unit_offsets(*p);
    auto permute = [&](const Tensor& t) {
      std::vector<Tensor> rows;
      for (int64_t u : units) {
        size_t at = std::find(p->units.begin(), p->units.end(), u) - p->units.begin();
        rows.push_back(slice_rows(t, offsets[at], p->rows_of_unit(u)));
      }
      return rows.empty() ? t.clone() : concat_rows(rows);
    };
    Tensor value = permute(p->value);
    for (auto& [name, slot] : p->state) slot = permute(slot);
    p->value = value;
    p->value.set_requires_grad(true);
    p->units = units;
  }
}

void set_active_units(const std::vector<Parameter*>& group, int64_t active) {
  for (Parameter* p : group) {
    FLEXTP_CHECK(active <= static_cast<int64_t>(p->units.size()), "set_active_units: ", active, " of ",
                 p->units.size(), " units of ", p->name);
    if (active < 0 || active == static_cast<int64_t>(p->units.size())) {
      p->active_rows = -1;
      continue;
    }
    p->active_rows = p->rows_of_first_units(active);
  }
}

}  // namespace flextp

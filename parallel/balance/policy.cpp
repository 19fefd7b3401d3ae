#include "parallel/balance/policy.h"

#include <algorithm>

namespace flextp {

const char* action_name(Action a) {
  switch (a) {
    case Action::keep: return "keep";
    case Action::resize: return "resize";
    case Action::migrate: return "migrate";
    case Action::probe: return "probe";
  }
  return "?";
}

Decision keep_at(const Observation& o, const std::vector<double>& speed) {
  Decision d;
  d.plan.target = o.partition;
  d.plan.now_ms = d.plan.after_ms = predicted_step_ms(o.partition, speed, o.model);
  d.plan.ideal_ms = ideal_step_ms(o.partition, speed, o.model);
  return d;
}

Decision resize_to(const Observation& o, const std::vector<double>& speed) {
  Decision d = keep_at(o, speed);
  d.action = Action::resize;
  for (const UnitGroup& g : o.model.groups)
    if (g.resizable) d.keep[g.name] = o.resizer.keep_count(o.partition.owners(g.name), speed, o.rank);
  d.plan.after_ms = resized_step_ms(o, speed);
  return d;
}

double resized_step_ms(const Observation& o, const std::vector<double>& speed) {
  return predicted_step_ms(o.partition, speed, o.model,
                           [&](const std::string& group, const std::vector<int>& owners, int r, double held) {
                             if (!o.model.group(group).resizable) return held;
                             return std::min<double>(held, o.resizer.keep_count(owners, speed, r));
                           });
}

int64_t skipped_here(const Observation& o, const Decision& d) {
  int64_t skipped = 0;
  for (const auto& [group, keep] : d.keep) {
    int64_t held = static_cast<int64_t>(o.partition.units_of(group, o.rank).size());
    skipped += std::max<int64_t>(0, held - keep);
  }
  return skipped;
}

Decision probe(const Observation& o) {
  Decision d = keep_at(o, o.speeds);
  d.action = Action::probe;
  return d;
}

Decision migrate_by(Plan plan) {
  Decision d;
  d.action = Action::migrate;
  d.plan = std::move(plan);
  return d;
}

}  // namespace flextp

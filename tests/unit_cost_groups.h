#pragma once
// The planner tests' two groups of 24 unit-cost units with no replicated work, so that a rank's
// time is its units / its speed.
#include <vector>

#include "parallel/balance/planner.h"
#include "parallel/tp/partition.h"

namespace flextp::test {

inline std::vector<UnitGroup> unit_cost_groups() {
  return {{"h.0.head", UnitKind::Head, 0, 24, 0, true, {}}, {"h.0.mlp", UnitKind::Mlp, 0, 24, 0, true, {}}};
}

inline UnitCosts unit_costs_of_one() {
  UnitCosts c;
  c.work = {{"h.0.head", 1.0}, {"h.0.mlp", 1.0}};
  c.bytes = {{"h.0.head", 100.0}, {"h.0.mlp", 100.0}};
  return c;
}

}  // namespace flextp::test

#pragma once
// The planner tests' two groups of 24 units of work 1 (100 bytes each) with no replicated work,
// so that a rank's time is its units / its speed.
#include <vector>

#include "parallel/balance/planner.h"
#include "parallel/tp/partition.h"

namespace flextp::test {

inline ModelCosts unit_costs_of_one() {
  return {{{"h.0.head", UnitKind::Head, 0, 24, 0, true, {1.0, 100.0}},
           {"h.0.mlp", UnitKind::Mlp, 0, 24, 0, true, {1.0, 100.0}}}};
}

inline std::vector<UnitGroup> unit_cost_groups() { return unit_costs_of_one().groups; }

}  // namespace flextp::test

// The planner with 3 and 4 ranks of distinct speeds: each group's units in proportion to the
// ranks' speeds, the plan's predicted steps and its moves. Injected numbers, on paper; no clocks.
#include <doctest/doctest.h>

#include "parallel/balance/planner.h"
#include "tests/unit_cost_groups.h"

using namespace flextp;

namespace {

std::vector<UnitGroup> groups() { return test::unit_cost_groups(); }
ModelCosts costs() { return test::unit_costs_of_one(); }
int units_of(const Partition& p, int rank) {
  return static_cast<int>(p.units_of("h.0.head", rank).size() + p.units_of("h.0.mlp", rank).size());
}

}  // namespace

TEST_CASE("3 ranks of distinct speeds: targets in proportion, the slowest rank's time is the step") {
  Partition three = Partition::even(groups(), 3);
  const std::vector<double> speed{1, 2, 0.5};
  CHECK(predicted_step_ms(three, speed, costs()) == doctest::Approx(32.0));  // 8 + 8 units at 0.5
  Partition by_speed = balanced_partition(three, speed, costs());
  // Per group 24 units at speeds 1:2:0.5: 7, 14, 3 (7 ms, 7 ms, 6 ms).
  CHECK(units_of(by_speed, 0) == 14);
  CHECK(units_of(by_speed, 1) == 28);
  CHECK(units_of(by_speed, 2) == 6);
  CHECK(predicted_step_ms(by_speed, speed, costs()) == doctest::Approx(14.0));
  CHECK(ideal_step_ms(three, speed, costs()) == doctest::Approx(48 / 3.5));
  CommCostModel free;
  free.fits["p2p"] = {0.0, 0.0};
  Plan plan = plan_migration(three, speed, costs(), free, {50, 0.1});
  CHECK(plan.migrate);
  CHECK(plan.target == by_speed);
  // Rank 0 keeps 7 of its 8 per group; rank 2 gives 5; rank 1 takes 6: 12 units move.
  CHECK(plan.units_moved == 12);
  CHECK(plan.bytes == doctest::Approx(1200.0));
  CHECK(plan.now_ms == doctest::Approx(32.0));
  CHECK(plan.after_ms == doctest::Approx(14.0));
  CHECK(plan.units_to == std::vector<int64_t>{0, 12, 0});
  // Its undo, back to the even split: rank 0 takes back 2 units, rank 2 10; the line names them.
  Plan back;
  back.migrate = back.undo = true;
  back.target = three;
  count_moves(by_speed, costs(), free, back);
  CHECK(back.units_to == std::vector<int64_t>{2, 0, 10});
  CHECK(back.str() == "undo: 12 units, 1 KiB, back to ranks 0 (2), 2 (10), where they were before the try (its steps "
                      "were slower); transfer 0.0 ms");
}

TEST_CASE("4 ranks: ties go to the lower rank, so every rank computes the same target") {
  Partition four = Partition::even(groups(), 4);  // 6 of each group per rank
  const std::vector<double> speed{1, 1, 1, 0.5};
  Partition target = balanced_partition(four, speed, costs());
  // 24 units at 1:1:1:0.5 per group: 7, 7, 7, 3 (7 ms, 7 ms, 7 ms, 6 ms).
  CHECK(units_of(target, 0) == 14);
  CHECK(units_of(target, 1) == 14);
  CHECK(units_of(target, 2) == 14);
  CHECK(units_of(target, 3) == 6);
  CHECK(balanced_partition(four, speed, costs()) == target);
  // Equal speeds: the even split is already balanced and nothing moves.
  CommCostModel free;
  free.fits["p2p"] = {0.0, 0.0};
  Plan none = plan_migration(four, {1, 1, 1, 1}, costs(), free, {50, 0.1});
  CHECK_FALSE(none.migrate);
  CHECK(none.units_moved == 0);
  CHECK(none.target == four);
}

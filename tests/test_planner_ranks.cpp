// The planner with 3 and 4 ranks of distinct speeds (the burst, hold and wait tests of
// test_bursts.cpp and test_holds.cpp use 2): "the others" of a rank are the latest of them
// (planner.h), so a rank is first wherever it is not the last to arrive. Injected numbers, on
// paper; no clocks.
#include <doctest/doctest.h>

#include "parallel/balance/planner.h"
#include "tests/unit_cost_groups.h"

using namespace flextp;

namespace {

std::vector<UnitGroup> groups() { return test::unit_cost_groups(); }
UnitCosts costs() { return test::unit_costs_of_one(); }
int units_of(const Partition& p, int rank) {
  return static_cast<int>(p.units_of("h.0.head", rank).size() + p.units_of("h.0.mlp", rank).size());
}

}  // namespace

TEST_CASE("3 and 4 ranks: a hold costs where the rank is not the last to arrive, descheduled time where it is") {
  Partition three = Partition::even(groups(), 3);  // 8:8:8 units of each group: 16 per rank
  const std::vector<double> speed{1, 2, 0.5};      // mean times 16, 8, 32 ms
  // Ranks 0 and 1 arrive before rank 2 everywhere: their whole holds; rank 2 none. Rank 0 is
  // behind rank 1, but ahead of the latest of its others.
  CHECK(burst_wait_ms(three, speed, costs(), {}, {10, 20, 40}) == doctest::Approx(10.0 + 20.0));
  // Only the last rank's descheduled time delays the others.
  CHECK(burst_wait_ms(three, speed, costs(), {}, {}, {3, 5, 7}) == doctest::Approx(7.0));
  CHECK(predicted_step_ms(three, speed, costs(), {}, {10, 20, 40}, {3, 5, 7}) == doctest::Approx(32.0 + 30.0 + 7.0));
  // Four ranks, mean times 12, 6, 24, 9: every rank but rank 2 is ahead of its latest other.
  Partition four = Partition::even(groups(), 4);
  const std::vector<double> speed4{1, 2, 0.5, 4.0 / 3.0};
  CHECK(burst_wait_ms(four, speed4, costs(), {}, {1, 2, 4, 8}) == doctest::Approx(1.0 + 2.0 + 8.0));
  CHECK(burst_wait_ms(four, speed4, costs(), {}, {}, {16, 32, 64, 128}) == doctest::Approx(64.0));
}

TEST_CASE("3 ranks: a burst spreads a rank's arrivals around the latest of its others") {
  Partition three = Partition::even(groups(), 3);
  const std::vector<double> speed{16.0 / 24, 0.8, 1};  // mean times 24, 20, 16 ms
  // Rank 0, 4 ms behind the latest other (rank 1) with a 4 ms burst: first at 1/2 - 4 / 16 = 1/4 of
  // the sync points. Rank 1, 4 ms ahead of rank 0 with an 8 ms burst: first at 1/2 + 4 / 32 = 5/8.
  // Rank 2, steady and 8 ms ahead: first everywhere.
  const std::vector<double> burst{4, 8, 0}, hold{8, 16, 6}, off{12, 4, 5};
  CHECK(burst_wait_ms(three, speed, costs(), burst, hold, {}) == doctest::Approx(8 / 4.0 + 16 * 5 / 8.0 + 6));
  CHECK(burst_wait_ms(three, speed, costs(), burst, {}, off) == doctest::Approx(12 * 3 / 4.0 + 4 * 3 / 8.0));
  CHECK(burst_wait_ms(three, speed, costs(), burst, hold, off) == doctest::Approx(11.0 + 11.5 + 6.0));
}

TEST_CASE("3 ranks: the expected slowest arrival over every rank's shape") {
  // Each rank 5 or 15 ms, independently: the slowest is 5 only when all three are, 1/8.
  CHECK(expected_slowest_ms({10, 10, 10}, {{0.5, 1.5}, {0.5, 1.5}, {0.5, 1.5}}) == doctest::Approx(15 * 7 / 8.0 + 5 / 8.0));
  Partition three = Partition::even(groups(), 3);
  const std::vector<double> steady(kBurstShapePoints, 1.0), swing = test::swinging_shape(0.25);
  // Mean times 16, 8, 20 ms; ranks 0 and 2 late or early by 25% half the time: the slowest is
  // max(12 or 20, 8, 15 or 25): 15, 25, 20, 25 equally likely, 21.25 against 20.
  const std::vector<double> speed{1, 2, 0.8};
  CHECK(burst_wait_ms(three, speed, costs(), {}, {}, {}, {swing, steady, swing}) == doctest::Approx(1.25));
  // The middle rank's swing (6 or 10 ms) never reaches the slowest's 20: nothing.
  CHECK(burst_wait_ms(three, speed, costs(), {}, {}, {}, {steady, test::swinging_shape(0.25), steady}) ==
        doctest::Approx(0.0));
}

TEST_CASE("3 ranks of distinct speeds: targets in proportion; a bursty rank gets a head start, the others take its units") {
  Partition three = Partition::even(groups(), 3);
  const std::vector<double> speed{1, 2, 0.5};
  Partition by_speed = balanced_partition(three, speed, costs());
  // Per group 24 units at speeds 1:2:0.5: 7, 14, 3 (7 ms, 7 ms, 6 ms).
  CHECK(units_of(by_speed, 0) == 14);
  CHECK(units_of(by_speed, 1) == 28);
  CHECK(units_of(by_speed, 2) == 6);
  CHECK(predicted_step_ms(by_speed, speed, costs()) == doctest::Approx(14.0));
  // Rank 0 bursts 2 ms a step, 25% late half the time; the others are steady.
  const std::vector<double> burst{2, 0, 0};
  const std::vector<double> steady(kBurstShapePoints, 1.0);
  const std::vector<std::vector<double>> shapes{test::swinging_shape(0.25), steady, steady};
  Partition target = burst_aware_partition(three, speed, costs(), burst, {}, {}, shapes);
  CHECK(units_of(target, 0) < units_of(by_speed, 0));
  CHECK(units_of(target, 1) + units_of(target, 2) > units_of(by_speed, 1) + units_of(by_speed, 2));
  CHECK(predicted_step_ms(target, speed, costs(), burst, {}, {}, shapes) <
        predicted_step_ms(by_speed, speed, costs(), burst, {}, {}, shapes));
  CommCostModel free;
  free.fits["p2p"] = {0.0, 0.0};
  // 15 against 15.75 ms: a 4.8% gain.
  Plan plan = plan_migration(three, speed, costs(), free, {50, 0.02}, burst, {}, {}, shapes);
  CHECK(plan.migrate);
  CHECK(plan.target == target);
  CHECK(plan.burst_wait_ms == doctest::Approx(burst_wait_ms(target, speed, costs(), burst, {}, {}, shapes)));
}

// Bursts: a rank that runs in time slices keeps the others waiting at the collectives where it is
// late. The burst meter (what a rank measures of itself), the monitor's row, the planner's
// waits and targets with bursts, on hand-made segment times: no clocks, no timing asserts.
#include <doctest/doctest.h>

#include <numeric>

#include "core/error.h"
#include "parallel/balance/burst_meter.h"
#include "parallel/balance/monitor.h"
#include "parallel/balance/planner.h"
#include "parallel/balance/step_clock.h"
#include "tests/unit_cost_groups.h"

using namespace flextp;

namespace {

std::vector<UnitGroup> groups() { return test::unit_cost_groups(); }
UnitCosts costs() { return test::unit_costs_of_one(); }
int units_of(const Partition& p, int rank) {
  return static_cast<int>(p.units_of("h.0.head", rank).size() + p.units_of("h.0.mlp", rank).size());
}

// The bursts a meter charges over these steps of segment times, one number per step.
std::vector<double> bursts(const std::vector<std::vector<double>>& steps) {
  BurstMeter meter;
  std::vector<double> out;
  for (const std::vector<double>& s : steps) out.push_back(meter.observe(s));
  return out;
}

}  // namespace

TEST_CASE("the burst meter charges a rank the time its segments run over their own means; a steady rank nothing") {
  // Three sync points a step. Rank 0 steady; rank 1 steady too but twice as slow (the emulated
  // straggler: slow, not bursty); rank 2 like rank 0 but late by 4 ms at the second sync point
  // in every fourth step (a time slice lost).
  // Rank 3 is steady until it slows down 3x evenly from step 8 (an emulated straggler's onset).
  std::vector<std::vector<double>> steady, slow, bursty, onset;
  for (int step = 0; step < 16; ++step) {
    steady.push_back({5, 3, 7});
    slow.push_back({10, 6, 14});
    bursty.push_back({5, step % 4 == 3 ? 7.0 : 3.0, 7});
    onset.push_back(step < 8 ? std::vector<double>{5, 3, 7} : std::vector<double>{15, 9, 21});
  }
  for (double b : bursts(steady)) CHECK(b == 0.0);
  for (double b : bursts(slow)) CHECK(b == 0.0);
  for (double b : bursts(onset)) CHECK(b == doctest::Approx(0.0));  // slower, not bursty
  std::vector<double> late = bursts(bursty);
  // The first burst: 4 ms over a mean of exactly 3, the other segments at their usual pace.
  CHECK(late[3] == 4.0);
  for (int step = 0; step < 16; ++step) {
    INFO("step ", step);
    if (step % 4 != 3) CHECK(late[step] == 0.0);  // early relative to its mean: no one waits for it
    if (step % 4 == 3) CHECK(late[step] > 2.0);   // the mean learns of the bursts, so a little less
    if (step % 4 == 3) CHECK(late[step] <= 4.0);
  }
}

TEST_CASE("the burst meter restarts when the step's sync points change (or the rank's work does)") {
  BurstMeter meter;
  CHECK(meter.observe({5, 3}) == 0.0);
  CHECK(meter.observe({5, 6}) == 3.0);  // the pace of the segment on time
  CHECK(meter.observe({9, 9, 9}) == 0.0);  // another shape of step: new means
  CHECK(meter.steps() == 1);
  CHECK(meter.observe({9, 10, 9}) == 1.0);
  CHECK_THROWS_WITH_AS(BurstMeter(0), doctest::Contains("at least 1 step"), Error);
}

TEST_CASE("the step clock keeps each compute segment of the step, one per collective and one at its end") {
  auto single = make_single_process_communicator();
  StepClock clock(*single, SlowdownSchedule{});
  for (int64_t step = 0; step < 2; ++step) {
    clock.begin_step(step);
    Tensor t = Tensor::zeros({4}, DType::F32);
    clock.all_reduce(t, ReduceOp::Sum);
    clock.barrier();
    clock.end_segment();
    CHECK(clock.segment_ms().size() == 3);
    double sum = std::accumulate(clock.segment_ms().begin(), clock.segment_ms().end(), 0.0);
    CHECK(sum == doctest::Approx(clock.compute_ms()));
  }
}

TEST_CASE("the monitor carries every rank's burst and smooths it like the speeds") {
  auto single = make_single_process_communicator();
  Monitor monitor(1, 3);  // alpha 0.5
  UnitCounts units;
  for (UnitKind k : kUnitKinds) units.held[k] = 1;
  monitor.record(*single, 10, 0, 100, units, 4.0);
  CHECK(bursts_of(monitor.table()) == std::vector<double>{4.0});
  monitor.record(*single, 10, 0, 100, units, 0.0);
  CHECK(monitor.table()[0].burst_ms == doctest::Approx(2.0));
  CHECK(Monitor::row(10, 0, 100, units, 3.0).back() == 3.0);
  CHECK_THROWS_WITH_AS(monitor.record(*single, 10, 0, 100, units, -1.0), doctest::Contains("burst of -1"), Error);
}

TEST_CASE("bursts add waits where the ranks finish close together, none where one is far ahead") {
  Partition even = Partition::even(groups(), 2);  // 12:12 units of each group
  // Balanced: the bursty rank is late by its whole burst.
  CHECK(burst_wait_ms(even, {1, 1}, costs(), {0, 3}) == doctest::Approx(3.0));
  CHECK(predicted_step_ms(even, {1, 1}, costs(), {0, 3}) == doctest::Approx(24.0 + 3.0));
  // 8 ms apart (24 vs 32 ms): half the gap absorbs 4 ms of a 6 ms burst...
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {0, 6}) == doctest::Approx(2.0));
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {6, 0}) == doctest::Approx(2.0));  // ...whichever rank bursts
  // ...and all of a 3 ms one.
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {3, 0}) == 0.0);
  // No bursts: the mean-speed step, exactly.
  CHECK(predicted_step_ms(even, {1, 0.75}, costs(), {}) == predicted_step_ms(even, {1, 0.75}, costs()));
  CHECK(predicted_step_ms(even, {1, 0.75}, costs(), {0, 0}) == predicted_step_ms(even, {1, 0.75}, costs()));
  CHECK(burst_wait_ms(Partition::even(groups(), 1), {1}, costs(), {5}) == 0.0);  // one rank waits for no one
  CHECK_THROWS_WITH_AS(burst_wait_ms(even, {1, 1}, costs(), {1}), doctest::Contains("1 bursts for 2 ranks"), Error);
  CHECK_THROWS_WITH_AS(burst_wait_ms(even, {1, 1}, costs(), {0, -1}), doctest::Contains("finite and >= 0"), Error);
}

TEST_CASE("a bursty rank gets fewer units than its mean speed alone gives, and the step is predicted faster for it") {
  Partition even = Partition::even(groups(), 2);
  const std::vector<double> speed{1, 0.5};
  Partition by_speed = balanced_partition(even, speed, costs());
  CHECK(units_of(by_speed, 1) == 16);  // 32 ms each
  // Rank 1 also bursts 4 ms a step: balanced by mean speed it makes rank 0 wait 4 ms.
  const std::vector<double> burst{0, 4};
  Partition target = burst_aware_partition(even, speed, costs(), burst);
  CHECK(units_of(target, 1) < units_of(by_speed, 1));
  CHECK(units_of(target, 1) >= 12);  // a head start of at most 2 x 4 ms: 4 units at its speed
  CHECK(predicted_step_ms(target, speed, costs(), burst) < predicted_step_ms(by_speed, speed, costs(), burst));
  CommCostModel free;
  free.fits["p2p"] = {0.0, 0.0};
  Plan plan = plan_migration(even, speed, costs(), free, {50, 0.05}, burst);
  CHECK(plan.migrate);
  CHECK(plan.target == target);
  CHECK(plan.after_ms == doctest::Approx(predicted_step_ms(target, speed, costs(), burst)));
  CHECK(plan.burst_wait_ms == doctest::Approx(burst_wait_ms(target, speed, costs(), burst)));
  // No bursts, or none anywhere: the mean-speed target, exactly.
  CHECK(burst_aware_partition(even, speed, costs(), {}) == by_speed);
  CHECK(burst_aware_partition(even, speed, costs(), {0, 0}) == by_speed);
  CHECK(plan_migration(even, speed, costs(), free, {50, 0.05}, {0, 0}).target == by_speed);
}

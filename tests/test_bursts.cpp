// Bursts: a rank that runs in time slices keeps the others waiting at the collectives where it is
// late. The burst meter (what a rank measures of itself), the monitor's row, the planner's
// waits and targets with bursts, on hand-made segment times: no clocks, no timing asserts.
#include <doctest/doctest.h>

#include <limits>
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
  for (const std::vector<double>& s : steps) out.push_back(meter.observe(s).ms);
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
  CHECK(meter.observe({5, 3}).ms == 0.0);
  CHECK(meter.observe({5, 6}).ms == 3.0);  // the pace of the segment on time
  BurstSample restarted = meter.observe({9, 9, 9});  // another shape of step: new means, steady
  CHECK(restarted.ms == 0.0);
  CHECK(restarted.shape == std::vector<double>(kBurstShapePoints, 1.0));
  CHECK(meter.steps() == 1);
  CHECK(meter.observe({9, 10, 9}).ms == 1.0);
  CHECK_THROWS_WITH_AS(BurstMeter(0), doctest::Contains("at least 1 step"), Error);
}

TEST_CASE("a burst's shape: the segments' lateness relative to the step's mean pace, weighted by the segments' means") {
  // Steady, or slowed evenly: all 1.
  CHECK(burst_shape({5, 3, 7, 1}, {5, 3, 7, 1}) == std::vector<double>(kBurstShapePoints, 1.0));
  std::vector<double> even = burst_shape({15, 9, 21, 3}, {5, 3, 7, 1});
  for (double x : even) CHECK(x == doctest::Approx(1.0));
  // A duty cycle: the first half of the step's mean time at twice the pace of the second. Over
  // the mean pace (1.5) the fast half is 2/3 and the slow one 4/3, whatever the segments' count.
  std::vector<double> duty = burst_shape({4, 2, 2, 8, 4, 4}, {4, 2, 2, 4, 2, 2});
  for (int j = 0; j < kBurstShapePoints; ++j) {
    INFO("point ", j);
    CHECK(duty[j] == doctest::Approx(j < kBurstShapePoints / 2 ? 2.0 / 3 : 4.0 / 3));
  }
  // One short segment late by 4x weighs by its mean: 1 ms of 16 is less than an eighth of the
  // step, so no point shows it (its time is in the mean pace).
  std::vector<double> short_late = burst_shape({5, 3, 7, 4}, {5, 3, 7, 1});
  for (double x : short_late) CHECK(x == doctest::Approx(1.0));
  // Lateness in a long segment does show.
  std::vector<double> long_late = burst_shape({10, 3, 2, 1}, {5, 3, 2, 1});
  CHECK(long_late.back() > 1.3);
  CHECK(long_late.front() < 0.8);
  double mean = 0;
  for (double x : long_late) mean += x / kBurstShapePoints;
  CHECK(mean == doctest::Approx(1.0));
  // Nothing to compare with, or nothing measurable: steady, never NaN (the monitor refuses it).
  CHECK(burst_shape({}, {}) == std::vector<double>(kBurstShapePoints, 1.0));
  CHECK(burst_shape({3}, {0}) == std::vector<double>(kBurstShapePoints, 1.0));
  CHECK(burst_shape({0, 0}, {1, 1}) == std::vector<double>(kBurstShapePoints, 1.0));
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(burst_shape({inf, nan}, {1, 1}) == std::vector<double>(kBurstShapePoints, 1.0));
  // A segment of 0 ms or an infinite one is left out; the others still shape the step.
  std::vector<double> partly = burst_shape({0, 2, 1, inf}, {1, 1, 1, 1});
  CHECK(partly.front() == doctest::Approx(2.0 / 3));
  CHECK(partly.back() == doctest::Approx(4.0 / 3));
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
  monitor.record(*single, 10, 0, 100, units, BurstSample(4.0));
  CHECK(bursts_of(monitor.table()) == std::vector<double>{4.0});
  monitor.record(*single, 10, 0, 100, units, BurstSample(0.0));
  CHECK(monitor.table()[0].burst_ms == doctest::Approx(2.0));
  std::vector<double> row = Monitor::row(10, 0, 100, units, BurstSample(3.0));
  CHECK(row[row.size() - 1 - kBurstShapePoints] == 3.0);
  // The shape rides on the row after the burst and is smoothed point by point.
  BurstSample duty(1.0);
  for (int j = 0; j < kBurstShapePoints; ++j) duty.shape[j] = j < kBurstShapePoints / 2 ? 0.5 : 1.5;
  monitor.record(*single, 10, 0, 100, units, duty);
  CHECK(monitor.table()[0].burst_shape.front() == doctest::Approx(0.75));
  CHECK(monitor.table()[0].burst_shape.back() == doctest::Approx(1.25));
  CHECK(burst_shapes_of(monitor.table()) == std::vector<std::vector<double>>{monitor.table()[0].burst_shape});
  CHECK_THROWS_WITH_AS(monitor.record(*single, 10, 0, 100, units, BurstSample(-1.0)), doctest::Contains("burst of -1"), Error);
  duty.shape[2] = 0;
  CHECK_THROWS_WITH_AS(monitor.record(*single, 10, 0, 100, units, duty), doctest::Contains("burst shape of 0"), Error);
  duty.shape.pop_back();
  CHECK_THROWS_WITH_AS(Monitor::row(10, 0, 100, units, duty), doctest::Contains("shape has 7 points"), Error);
}

TEST_CASE("the slowest of independent spread arrivals, on paper") {
  CHECK(expected_slowest_ms({10, 20}, {}) == 20.0);  // steady: the slowest mean
  CHECK(expected_slowest_ms({10, 10}, {{}, {0.5, 1.5}}) == doctest::Approx(12.5));  // half the time 15
  // Three equally likely values 5, 10, 15 each; independent ranks: 110 / 9 (not one rank's 35 / 3).
  CHECK(expected_slowest_ms({10, 10}, {{0.5, 1, 1.5}, {0.5, 1, 1.5}}) == doctest::Approx(110.0 / 9));
  CHECK(expected_slowest_ms({10, 10}, {{}, {0.5, 1, 1.5}}) == doctest::Approx(35.0 / 3));
  CHECK(expected_slowest_ms({}, {}) == 0.0);
  CHECK_THROWS_WITH_AS(expected_slowest_ms({10, std::numeric_limits<double>::quiet_NaN()}, {}),
                       doctest::Contains("finite and >= 0"), Error);
  CHECK_THROWS_WITH_AS(expected_slowest_ms({10, 10}, {{1}}), doctest::Contains("1 burst shapes for 2 ranks"), Error);
}

TEST_CASE("bursts add waits where the ranks finish close together, none where one is far ahead") {
  Partition even = Partition::even(groups(), 2);  // 12:12 units of each group, 24 ms each at speed 1
  const std::vector<double> steady(kBurstShapePoints, 1.0), half = test::swinging_shape(0.5),
                            slight = test::swinging_shape(0.2);
  // Balanced: the bursty rank is late by half its 12 ms swing, half the time.
  CHECK(burst_wait_ms(even, {1, 1}, costs(), {}, {}, {}, {steady, half}) == doctest::Approx(6.0));
  CHECK(predicted_step_ms(even, {1, 1}, costs(), {}, {}, {}, {steady, half}) == doctest::Approx(24.0 + 6.0));
  // 24 vs 32 ms: the slower rank bursting ends at 48 half the time, at the other's 24 (not its
  // own 16) otherwise: 36 against 32...
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {}, {}, {}, {steady, half}) == doctest::Approx(4.0));
  // ...the faster one 36 - 32 half the time: its lead absorbs most of it...
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {}, {}, {}, {half, steady}) == doctest::Approx(2.0));
  // ...and all of a +-20% one (28.8 < 32).
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {}, {}, {}, {slight, steady}) == 0.0);
  // A duty cycle on the slower rank (mean 32, 2/3 and 4/3 of it half the time): its fast half
  // (21.3) is faster than the other rank (24), so it is late only in its slow half.
  std::vector<double> duty(kBurstShapePoints);
  for (int j = 0; j < kBurstShapePoints; ++j) duty[j] = j % 2 ? 4.0 / 3 : 2.0 / 3;
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {}, {}, {}, {steady, duty}) ==
        doctest::Approx((24.0 + 32.0 * 4 / 3) / 2 - 32.0));
  // A shape off a mean of 1 (hand-made, or the median of each point over steps) counts only by
  // its spread: never a shorter step than the mean speeds give.
  std::vector<double> low(kBurstShapePoints), scaled_half = half;
  for (int j = 0; j < kBurstShapePoints; ++j) low[j] = 0.9, scaled_half[j] *= 0.8;
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {}, {}, {}, {steady, low}) == 0.0);
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {}, {}, {}, {steady, scaled_half}) == doctest::Approx(4.0));
  // No bursts, or steady shapes: the mean-speed step, exactly.
  CHECK(predicted_step_ms(even, {1, 0.75}, costs(), {}) == predicted_step_ms(even, {1, 0.75}, costs()));
  CHECK(predicted_step_ms(even, {1, 0.75}, costs(), {0, 0}) == predicted_step_ms(even, {1, 0.75}, costs()));
  CHECK(predicted_step_ms(even, {1, 0.75}, costs(), {3, 3}, {}, {}, {steady, steady}) ==
        predicted_step_ms(even, {1, 0.75}, costs()));
  CHECK(burst_wait_ms(Partition::even(groups(), 1), {1}, costs(), {5}, {}, {}, {half}) == 0.0);  // one rank waits for no one
  CHECK_THROWS_WITH_AS(burst_wait_ms(even, {1, 1}, costs(), {1}), doctest::Contains("1 bursts for 2 ranks"), Error);
  CHECK_THROWS_WITH_AS(burst_wait_ms(even, {1, 1}, costs(), {0, -1}), doctest::Contains("finite and >= 0"), Error);
  CHECK_THROWS_WITH_AS(burst_wait_ms(even, {1, 1}, costs(), {}, {}, {}, {half}),
                       doctest::Contains("1 burst shapes for 2 ranks"), Error);
  CHECK_THROWS_WITH_AS(burst_wait_ms(even, {1, 1}, costs(), {}, {}, {}, {half, {1, -1}}),
                       doctest::Contains("finite and > 0"), Error);
}

TEST_CASE("a bursty rank gets fewer units than its mean speed alone gives, and the step is predicted faster for it") {
  Partition even = Partition::even(groups(), 2);
  const std::vector<double> speed{1, 0.5};
  Partition by_speed = balanced_partition(even, speed, costs());
  CHECK(units_of(by_speed, 1) == 16);  // 32 ms each
  // Rank 1 also bursts 4 ms a step, 25% late half the time: balanced by mean speed it makes
  // rank 0 wait 4 ms.
  const std::vector<double> burst{0, 4};
  const std::vector<std::vector<double>> shapes{std::vector<double>(kBurstShapePoints, 1.0), test::swinging_shape(0.25)};
  CHECK(burst_wait_ms(by_speed, speed, costs(), burst, {}, {}, shapes) == doctest::Approx(4.0));
  Partition target = burst_aware_partition(even, speed, costs(), burst, {}, {}, shapes);
  CHECK(units_of(target, 1) < units_of(by_speed, 1));
  CHECK(units_of(target, 1) >= 12);  // a head start of at most 2 x 4 ms: 4 units at its speed
  CHECK(predicted_step_ms(target, speed, costs(), burst, {}, {}, shapes) <
        predicted_step_ms(by_speed, speed, costs(), burst, {}, {}, shapes));
  CommCostModel free;
  free.fits["p2p"] = {0.0, 0.0};
  Plan plan = plan_migration(even, speed, costs(), free, {50, 0.05}, burst, {}, {}, shapes);
  CHECK(plan.migrate);
  CHECK(plan.target == target);
  CHECK(plan.after_ms == doctest::Approx(predicted_step_ms(target, speed, costs(), burst, {}, {}, shapes)));
  CHECK(plan.burst_wait_ms == doctest::Approx(burst_wait_ms(target, speed, costs(), burst, {}, {}, shapes)));
  // No bursts, or none anywhere: the mean-speed target, exactly.
  CHECK(burst_aware_partition(even, speed, costs(), {}) == by_speed);
  CHECK(burst_aware_partition(even, speed, costs(), {0, 0}) == by_speed);
  CHECK(plan_migration(even, speed, costs(), free, {50, 0.05}, {0, 0}).target == by_speed);
}

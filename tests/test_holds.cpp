// Holds and lateness: a time-sliced rank descheduled while it waits inside a collective keeps
// whoever arrives after it waiting. The ledger of a rank's collectives (what it measures of
// itself), the attribution of waits to the last arriver, the monitor's rows, and the planner's
// waits with holds, on injected numbers: no timing asserts.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "parallel/balance/monitor.h"
#include "parallel/balance/planner.h"
#include "parallel/balance/step_clock.h"
#include "tests/unit_cost_groups.h"
#include "parallel/balance/sync_ledger.h"

using namespace flextp;

namespace {

std::vector<UnitGroup> groups() { return test::unit_cost_groups(); }
UnitCosts costs() { return test::unit_costs_of_one(); }
// Rank 1 late by 25% half the time, rank 0 steady.
const std::vector<std::vector<double>> spread{std::vector<double>(kBurstShapePoints, 1.0), test::swinging_shape(0.25)};
UnitCounts some_units() {
  UnitCounts units;
  for (UnitKind k : kUnitKinds) units.held[k] = 1;
  return units;
}

// Rank 0 of two: the all-gather appends the other rank's row, played from `peer`.
class PlayedPeer : public Communicator {
 public:
  SyncLedger peer;
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const char* backend() const override { return "played"; }
  void all_reduce(Tensor&, ReduceOp) override {}
  void broadcast(Tensor&, int) override {}
  void all_gather(const Tensor& in, Tensor& out) override {
    std::vector<double> all = in.to_vector<double>(), theirs = Monitor::row(10, 0, 100, some_units(), BurstSample(), peer);
    all.insert(all.end(), theirs.begin(), theirs.end());
    out.copy_from(Tensor::from_vector(all, out.shape()));
  }
  void reduce_scatter(const Tensor&, Tensor&) override { FAIL("not played"); }
  void send_recv(const std::vector<Transfer>&, const std::vector<Transfer>&) override { FAIL("not played"); }
  void all_to_all_v(const Tensor&, const std::vector<int64_t>&, Tensor&, const std::vector<int64_t>&) override {
    FAIL("not played");
  }
  void barrier() override {}
};

}  // namespace

TEST_CASE("the sync ledger keeps a rank's arrivals and its time off the CPU inside collectives") {
  SyncLedger ledger;
  ledger.add(5, 1.0, 1.0);   // spun on the CPU the whole time
  ledger.add(9, 4.0, 1.0);   // descheduled 3 ms of it
  ledger.add(12, 2.0, 2.5);  // CPU time past the wall (clock granularity): none off
  ledger.add(20, 3.0, 2.0);  // descheduled 1 ms
  CHECK(ledger.collectives() == 4);
  CHECK(ledger.arrival_ms() == std::vector<double>{5, 9, 12, 20});
  CHECK(ledger.inside_ms() == 10.0);
  CHECK(ledger.descheduled_ms() == 4.0);
  // Off 40% of the time inside collectives, in stretches met at random with a mean rest of
  // (9 + 1) / (2 x 4) ms: 4 sync points x 0.4 x 1.25 ms.
  CHECK(ledger.hold_ms() == doctest::Approx(4 * (9.0 + 1.0) / (2 * 10.0)));
  ledger.clear();
  CHECK(ledger.collectives() == 0);
  CHECK(ledger.descheduled_ms() == 0.0);
  CHECK(ledger.hold_ms() == 0.0);
  ledger.add(1, 2.0, 2.0);  // never off: no hold, whatever the waits
  CHECK(ledger.hold_ms() == 0.0);
  CHECK_THROWS_WITH_AS(ledger.add(1, -1.0, 0.0), doctest::Contains("took -1 ms"), Error);
}

TEST_CASE("the step clock enters every collective of its group in its ledger, in order; another group's not") {
  auto single = make_single_process_communicator();
  StepClock clock(*single, SlowdownSchedule{});
  for (int64_t step = 0; step < 2; ++step) {
    clock.begin_step(step);
    Tensor t = Tensor::zeros({4}, DType::F32);
    clock.all_reduce(t, ReduceOp::Sum);
    clock.barrier();
    clock.timed([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });  // a data-parallel group's
    std::unique_ptr<PendingReduce> started = clock.start_all_reduce(t, ReduceOp::Sum);
    started->wait();  // one sync point, however it was waited for
    clock.end_segment();
    const SyncLedger& syncs = clock.syncs();
    REQUIRE(syncs.collectives() == 3);
    CHECK(syncs.arrival_ms()[0] >= 0);
    CHECK(syncs.arrival_ms()[1] >= syncs.arrival_ms()[0]);
    CHECK(syncs.arrival_ms()[2] >= syncs.arrival_ms()[1] + 2);  // after the other group's wait
    CHECK(syncs.inside_ms() <= clock.wait_ms() - 2);            // whose time counts as waiting only
    CHECK(syncs.descheduled_ms() <= syncs.inside_ms());
  }
}

TEST_CASE("lateness charges the last rank at each sync point its lead over the next, the others nothing") {
  // Three ranks, three sync points: rank 2 is last at the first by 4 ms over rank 1; rank 0 at
  // the second by 1 ms over rank 2; at the third ranks 0 and 1 tie last and no one is charged.
  std::vector<std::vector<double>> arrival{{1, 9, 20}, {3, 7, 20}, {7, 8, 15}};
  CHECK(lateness_ms(arrival) == std::vector<double>{1.0, 0.0, 4.0});
  // Rows of different lengths: only the sync points all have are compared.
  CHECK(lateness_ms({{1, 9, 20}, {3, 7}}) == std::vector<double>{2.0, 2.0});
  CHECK(lateness_ms({{5, 6}}) == std::vector<double>{0.0});  // one rank waits for no one
}

TEST_CASE("the monitor carries each rank's descheduled time and hold, and blames each its lateness") {
  PlayedPeer comm;
  comm.peer.add(2, 1, 1);   // the peer arrives 2 ms into its step at the first sync point...
  comm.peer.add(10, 5, 2);  // ...and 10 ms at the second, descheduled 3 ms inside it
  SyncLedger mine;
  mine.add(6, 1, 1);  // rank 0 is last at the first by 4 ms
  mine.add(7, 8, 8);  // and first at the second, 3 ms ahead
  Monitor monitor(2, 3);  // alpha 0.5
  monitor.record(comm, 10, 9, 100, some_units(), BurstSample(), mine);
  const std::vector<RankRow>& t = monitor.table();
  CHECK(t[0].late_ms == 4.0);
  CHECK(t[1].late_ms == 3.0);
  CHECK(t[0].descheduled_ms == 0.0);
  CHECK(t[1].descheduled_ms == 3.0);
  CHECK(t[0].hold_ms == 0.0);
  CHECK(t[1].hold_ms == doctest::Approx(comm.peer.hold_ms()));
  CHECK(holds_of(t) == std::vector<double>{0.0, comm.peer.hold_ms()});
  CHECK(t[0].collectives == 2);
  // Smoothed like the bursts: a step with no lateness halves it.
  const double hold = comm.peer.hold_ms();
  comm.peer.clear();
  mine.clear();
  monitor.record(comm, 10, 9, 100, some_units(), BurstSample(), mine);
  CHECK(monitor.table()[0].late_ms == doctest::Approx(2.0));
  CHECK(monitor.table()[1].hold_ms == doctest::Approx(hold / 2));
}

TEST_CASE("a hold costs the others where the rank arrives first, whatever its share of the work") {
  Partition even = Partition::even(groups(), 2);  // 12:12 units of each group, 24 ms each at speed 1
  // Balanced, no bursts: first at half the sync points.
  CHECK(burst_wait_ms(even, {1, 1}, costs(), {0, 0}, {0, 10}) == doctest::Approx(5.0));
  CHECK(predicted_step_ms(even, {1, 1}, costs(), {}, {0, 10}) == doctest::Approx(24.0 + 5.0));
  // Slower than the other (it arrives last everywhere): its hold costs nothing.
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {}, {0, 10}) == 0.0);
  // Faster (first everywhere): the whole hold.
  CHECK(burst_wait_ms(even, {1, 1.5}, costs(), {}, {0, 10}) == doctest::Approx(10.0));
  // With a burst of 3 ms (25% late half the time) its arrivals spread: balanced, half of its 6 ms
  // lateness and half the hold...
  CHECK(burst_wait_ms(even, {1, 1}, costs(), {0, 3}, {0, 10}, {}, spread) == doctest::Approx(3.0 + 5.0));
  // ...6 ms ahead (18 vs 24 ms), the burst absorbed (22.5 < 24) and always first...
  CHECK(burst_wait_ms(even, {1, 4.0 / 3.0}, costs(), {0, 3}, {0, 10}, {}, spread) == doctest::Approx(10.0));
  // ...3 ms ahead (24 vs 21 ms): 26.25 against 24 half the time, and 3/4 of the hold.
  CHECK(burst_wait_ms(even, {1, 24.0 / 21.0}, costs(), {0, 3}, {0, 10}, {}, spread) ==
        doctest::Approx(2.25 / 2 + 7.5));
  // No holds: exactly the bursts' waits.
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {0, 6}, {}) == burst_wait_ms(even, {1, 0.75}, costs(), {0, 6}));
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {0, 6}, {0, 0}) == burst_wait_ms(even, {1, 0.75}, costs(), {0, 6}));
  CHECK(predicted_step_ms(even, {1, 0.75}, costs(), {}, {}) == predicted_step_ms(even, {1, 0.75}, costs()));
  CHECK(burst_wait_ms(Partition::even(groups(), 1), {1}, costs(), {}, {5}) == 0.0);  // one rank waits for no one
  CHECK_THROWS_WITH_AS(burst_wait_ms(even, {1, 1}, costs(), {}, {1}), doctest::Contains("1 holds for 2 ranks"), Error);
  CHECK_THROWS_WITH_AS(burst_wait_ms(even, {1, 1}, costs(), {}, {0, -1}), doctest::Contains("holds must be finite"),
                       Error);
}

TEST_CASE("descheduled time costs the others where the rank arrives last; every rank's slices add up") {
  Partition even = Partition::even(groups(), 2);
  // The slowest (last everywhere): all its time off inside collectives delays the others.
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {}, {}, {0, 7}) == doctest::Approx(7.0));
  CHECK(predicted_step_ms(even, {1, 0.75}, costs(), {}, {}, {0, 7}) == doctest::Approx(32.0 + 7.0));
  // The fastest (first everywhere): none of it, its hold instead.
  CHECK(burst_wait_ms(even, {1, 1.5}, costs(), {}, {0, 10}, {0, 7}) == doctest::Approx(10.0));
  // Balanced: each rank half of its hold and half of its descheduled time, added over the ranks.
  CHECK(burst_wait_ms(even, {1, 1}, costs(), {}, {4, 10}, {2, 6}) == doctest::Approx(3.0 + 8.0));
  // With a burst of 3 ms, 3 ms ahead (24 vs 21 ms): a quarter of it.
  CHECK(burst_wait_ms(even, {1, 24.0 / 21.0}, costs(), {0, 3}, {}, {0, 8}, spread) == doctest::Approx(2.25 / 2 + 2.0));
  CHECK(burst_wait_ms(even, {1, 0.75}, costs(), {0, 6}, {}, {0, 0}) == burst_wait_ms(even, {1, 0.75}, costs(), {0, 6}));
  CHECK_THROWS_WITH_AS(burst_wait_ms(even, {1, 1}, costs(), {}, {}, {1, 2, 3}),
                       doctest::Contains("3 descheduled times for 2 ranks"), Error);
}

TEST_CASE("a large hold makes the planner keep a bursty rank's head start small") {
  Partition even = Partition::even(groups(), 2);
  const std::vector<double> speed{1, 0.5}, burst{0, 4};
  Partition by_speed = balanced_partition(even, speed, costs());
  // 25% late half the time: 40 against 32 ms.
  REQUIRE(burst_aware_partition(even, speed, costs(), burst, {}, {}, spread) != by_speed);  // a head start without holds
  // Ahead by a head start it would be first at most sync points and hold the others up to 16 ms a
  // step; balanced, half of that and the burst.
  const std::vector<double> hold{0, 16};
  CHECK(burst_aware_partition(even, speed, costs(), burst, hold, {}, spread) == by_speed);
  CommCostModel free;
  free.fits["p2p"] = {0.0, 0.0};
  Plan plan = plan_migration(even, speed, costs(), free, {50, 0.05}, burst, hold, {}, spread);
  CHECK(plan.target == by_speed);
  CHECK(plan.migrate);
  CHECK(plan.burst_wait_ms == doctest::Approx(4.0 + 8.0));
  CHECK(plan.after_ms == doctest::Approx(predicted_step_ms(by_speed, speed, costs(), burst, hold, {}, spread)));
}

TEST_CASE("the planner's descheduled time leaves out what a rank was off while it waited for the others' arrival") {
  std::vector<RankRow> table(2);
  table[0].wait_ms = 10, table[0].descheduled_ms = 4;  // first: waited 6 ms for rank 1's arrival
  table[1].late_ms = 6;
  table[1].wait_ms = 5, table[1].descheduled_ms = 5;  // last: all of its wait came after the arrivals
  std::vector<double> d = descheduled_of(table);
  CHECK(d[0] == doctest::Approx(4.0 * (10 - 6) / 10));
  CHECK(d[1] == 5.0);
}

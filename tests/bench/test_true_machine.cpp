// bench_simulate --oracle's true machine and oracle search (bench/true_machine.h), on cases small
// enough to work out by hand. No clock: steps are arithmetic.
#include <doctest/doctest.h>

#include <vector>

#include "bench/true_machine.h"

using namespace flextp;

namespace {

// A group of `units` units of `work` each (and one byte).
UnitGroup group(const char* name, int64_t units, double work = 1.0) {
  return {name, UnitKind::Mlp, 0, units, 0, true, {work, 1.0}};
}

// One group of `units` units of work 1, replicated work `replicated`, 1 work per ms at speed 1.
TrueMachine one_group(int64_t units, double replicated) {
  TrueMachine m;
  m.model = {{group("h.0.mlp", units)}, replicated};
  return m;
}

}  // namespace

TEST_CASE("the oracle search finds the best static split by hand, where the planner's proportional split is not") {
  // 6 units, replicated work 2, speeds 1 and 0.5: with n units on rank 1 the ranks take
  // 2 + (6 - n) and (2 + n) / 0.5 ms. n = 0: max(8, 4); n = 1: max(7, 6); n = 2: max(6, 8).
  const TrueMachine m = one_group(6, 2.0);
  const std::vector<double> speed = {1.0, 0.5};
  const std::vector<StaticSplit> splits = static_splits(m, speed, {1, 1.5, 2, 3, 4});
  REQUIRE(!splits.empty());
  CHECK(splits.front().step_ms == doctest::Approx(7.0));
  CHECK(splits.front().partition.units_of("h.0.mlp", 1).size() == 1);
  for (const StaticSplit& s : splits) CHECK(s.step_ms >= splits.front().step_ms);
  // The exact search finds the same split.
  const Partition best = best_split(m, speed);
  CHECK(best.units_of("h.0.mlp", 1).size() == 1);
  CHECK(true_step(m, units_run(best), speed).step_ms == doctest::Approx(7.0));
  // The planner splits in proportion to speed (4:2) and charges the replicated work at the
  // slowest speed; on this machine that split takes 8 ms.
  const Partition planner = balanced_partition(Partition::even(m.model.groups, 2), speed, m.model);
  CHECK(planner.units_of("h.0.mlp", 1).size() == 2);
  CHECK(true_step(m, units_run(planner), speed).step_ms == doctest::Approx(8.0));
  // In fractions: 2 + (6 - x) = 4 + 2 x at x = 4/3.
  CHECK(fluid_ideal_ms(m, speed) == doctest::Approx(20.0 / 3));

  SUBCASE("a fixed overhead per unit and the collectives add as stated") {
    TrueMachine o = one_group(6, 2.0);
    o.unit_overhead_ms = 0.5;
    o.collectives_ms = 3;
    // n = 1 on rank 1: rank 0 2 + 5 + 2.5 ms, rank 1 (2 + 1) / 0.5 + 0.5 ms.
    CHECK(true_step(o, units_run(splits.front().partition), speed).step_ms == doctest::Approx(9.5 + 3));
  }
}

TEST_CASE("the true machine meets after every group: a step is the sum of the groups' slowest ranks") {
  TrueMachine m;
  m.model.groups = {group("a", 2), group("b", 2)};
  Partition p = Partition::even(m.model.groups, 2);
  p.set_owners("a", {0, 0});
  p.set_owners("b", {1, 1});
  // Each rank computes 2 ms, and waits 2 ms for the other in the group it does not hold.
  const TrueStep t = true_step(m, units_run(p), {1.0, 1.0});
  CHECK(t.step_ms == doctest::Approx(4.0));
  CHECK(t.compute_ms == std::vector<double>{2.0, 2.0});
  // Noise scales a rank's compute: rank 1 at 1.5x makes group b take 3 ms.
  CHECK(true_step(m, units_run(p), {1.0, 1.0}, {1.0, 1.5}).step_ms == doctest::Approx(5.0));
}

TEST_CASE("no split of the --tp-weights grid beats the exact best split, on 4 ranks") {
  // Layers of 4 heads and 10 MLP blocks, replicated work, an overhead per unit, uneven speeds.
  TrueMachine m;
  m.model = {{group("h.0.head", 4, 3.0), group("h.0.mlp", 10), group("h.1.head", 4, 3.0), group("h.1.mlp", 10)}, 6};
  m.unit_overhead_ms = 0.3;
  for (const std::vector<double>& speed : std::vector<std::vector<double>>{{1, 1, 1, 0.5}, {1, 1, 0.5, 0.5},
                                                                           {1.0 / 3, 0.5, 2.0 / 3, 1}}) {
    const double best = true_step(m, units_run(best_split(m, speed)), speed).step_ms;
    CHECK(best <= static_splits(m, speed, {1, 1.5, 2, 3, 4}).front().step_ms + 1e-9);
    CHECK(best >= fluid_ideal_ms(m, speed) - 1e-9);
    // Every single unit moved anywhere from the best split makes no step faster.
    const Partition p = best_split(m, speed);
    for (const auto& [name, owners] : p.groups())
      for (size_t u = 0; u < owners.size(); ++u)
        for (int to = 0; to < 4; ++to) {
          Partition q = p;
          std::vector<int> moved = owners;
          moved[u] = to;
          q.set_owners(name, moved);
          CHECK(true_step(m, units_run(q), speed).step_ms >= best - 1e-9);
        }
  }
}

TEST_CASE("the weight grid holds each ratio once") {
  // 1,1 2,2 4,4 are one ratio; 1,2 and 2,4 another: 9 points, 5 ratios.
  const std::vector<std::vector<double>> grid = weight_grid({1, 2, 4}, 2);
  CHECK(grid.size() == 5);
  CHECK(grid.front() == std::vector<double>{1, 1});
  CHECK(weight_grid({1, 1.5, 2, 3, 4}, 1).size() == 1);
}

// bench_simulate --grid's model of a data x tensor parallel step (bench/grid_model.h): the
// ordering of the four ways to run a heterogeneous grid and the ideal bound, and the step's parts
// by hand. Its window shares are train's (tests/test_window_shares.cpp).
#include <doctest/doctest.h>

#include <cmath>

#include "bench/grid_model.h"
#include "core/error.h"
#include "core/random.h"

using namespace flextp;

namespace {

GPTConfig tiny() {
  GPTConfig c;
  c.n_layer = 2, c.n_head = 4, c.n_embd = 32, c.mlp_unit = 16, c.vocab_size = 256, c.vocab_unit = 64;
  return c;
}

GridModel tiny_model(int tp, int64_t batch) { return GridModel(tiny(), 16, tp, batch, 100.0, {25, 10}, {10, 20}); }

GridSpeeds uniform(int dp, int tp) { return GridSpeeds(dp, std::vector<double>(tp, 1.0)); }

}  // namespace

TEST_CASE("a uniform grid gains nothing from either level") {
  GridModel m = tiny_model(2, 8);
  GridStep g = simulate_grid_step(m, uniform(4, 2));
  CHECK(g.migrate == doctest::Approx(g.even).epsilon(1e-12));
  CHECK(g.shares == doctest::Approx(g.even).epsilon(1e-12));
  CHECK(g.both == doctest::Approx(g.even).epsilon(1e-12));
  // Every group's units split evenly over 2 ranks: the even split is the ideal, communication included.
  CHECK(g.ideal == doctest::Approx(g.even).epsilon(1e-12));
}

TEST_CASE("ideal <= both <= each level <= even, on slow ranks, slow groups and log-normal speeds") {
  for (int tp : {1, 2, 4})
    for (int dp : {1, 2, 4}) {
      GridModel m = tiny_model(tp, 4 * dp);
      GridSpeeds one = uniform(dp, tp), node = uniform(dp, tp), lognormal = uniform(dp, tp);
      one[dp - 1][tp - 1] = 0.5;
      for (double& s : node[dp - 1]) s = 0.4;
      for (int d = 0; d < dp; ++d)
        for (int t = 0; t < tp; ++t) lognormal[d][t] = std::exp(0.3 * rng::normal(d * tp + t, 5, 42));
      for (const GridSpeeds& speed : {one, node, lognormal}) {
        GridStep g = simulate_grid_step(m, speed);
        INFO("tp " << tp << " dp " << dp);
        CHECK(g.ideal <= g.both * (1 + 1e-12));
        CHECK(g.both <= g.migrate * (1 + 1e-12));
        CHECK(g.both <= g.shares * (1 + 1e-12));
        CHECK(g.migrate <= g.even * (1 + 1e-12));
        CHECK(g.shares <= g.even * (1 + 1e-12));
      }
    }
}

TEST_CASE("each level helps where its heterogeneity lies") {
  GridModel m = tiny_model(2, 8);
  // One slow rank: migration inside its group helps; window shares help too (its replica is slower).
  GridSpeeds one = uniform(2, 2);
  one[1][1] = 0.5;
  GridStep g = simulate_grid_step(m, one);
  CHECK(g.migrate < g.even * 0.9);
  CHECK(g.shares < g.even * 0.9);
  CHECK(g.both < g.migrate);
  // A whole slow group: nothing to balance inside it, window shares do it all.
  GridSpeeds node = uniform(2, 2);
  node[1] = {0.5, 0.5};
  g = simulate_grid_step(m, node);
  CHECK(g.migrate == doctest::Approx(g.even).epsilon(1e-12));
  CHECK(g.shares < g.even * 0.9);
  CHECK(g.both == doctest::Approx(g.shares).epsilon(1e-12));
  // One replica: there is nothing to share.
  GridSpeeds alone = {{1.0, 0.5}};
  g = simulate_grid_step(m, alone);
  CHECK(g.shares == doctest::Approx(g.even).epsilon(1e-12));
  CHECK(g.both == doctest::Approx(g.migrate).epsilon(1e-12));
}

TEST_CASE("the grid step by hand: slowest replica's share plus the gradient all-reduce") {
  // One rank per group: a window takes 100 ms / speed and no tensor-parallel communication.
  GridModel m = tiny_model(1, 4);
  CHECK(m.tp_comm_ms_per_window() == 0);
  CHECK(m.replica_window_ms({1.0}, false) == doctest::Approx(100.0).epsilon(1e-12));
  CHECK(m.replica_window_ms({0.5}, true) == doctest::Approx(200.0).epsilon(1e-12));
  // Ring over 2 replicas: 2 (n - 1) (latency + bytes / n / bandwidth), 10 GB/s and 20 us.
  const double dp2 = 2 * (0.020 + m.slot_gradient_bytes() / 2 / 10e6);
  CHECK(m.dp_allreduce_ms(2) == doctest::Approx(dp2).epsilon(1e-12));
  CHECK(m.dp_allreduce_ms(1) == 0);
  GridSpeeds node = {{1.0}, {0.5}};
  // Even: 2 windows each, the slow replica takes 400 ms. Shares 3:1: max(300, 200).
  CHECK(m.step_ms(node, false, false) == doctest::Approx(400.0 + dp2).epsilon(1e-12));
  CHECK(m.step_ms(node, false, true) == doctest::Approx(300.0 + dp2).epsilon(1e-12));
  // Ideal: 4 windows of 100 ms at a total speed of 1.5, plus the same all-reduce.
  CHECK(m.ideal_ms(node) == doctest::Approx(400.0 / 1.5 + dp2).epsilon(1e-12));
  // The gradient of one slot is its share of the units' f32 weights: 1/2 of them at tp 2.
  CHECK(tiny_model(2, 4).slot_gradient_bytes() == doctest::Approx(m.slot_gradient_bytes() / 2).epsilon(1e-12));
  CHECK(m.slot_gradient_bytes() > 0);
}

TEST_CASE("tensor-parallel communication is two ring all-reduces of a window's activations per layer") {
  GridModel m = tiny_model(4, 4);
  // 2 layers x 2 all-reduces of 16 tokens x 32 channels x 4 bytes over 4 ranks at 25 GB/s, 10 us.
  const double one = 2 * 3 * (0.010 + 16 * 32 * 4.0 / 4 / 25e6);
  CHECK(m.tp_comm_ms_per_window() == doctest::Approx(4 * one).epsilon(1e-12));
  // The even split of a group of 4 at speed 1 computes a window in 100 / 4 ms.
  CHECK(m.replica_window_ms({1, 1, 1, 1}, false) == doctest::Approx(25.0 + 4 * one).epsilon(1e-12));
}

TEST_CASE("the grid model refuses grids it cannot price") {
  GridModel m = tiny_model(2, 4);
  CHECK_THROWS_WITH_AS(m.step_ms({{1.0, 1.0}, {1.0}}, false, false), doctest::Contains("in groups of 2"), Error);
  CHECK_THROWS_WITH_AS(m.step_ms({{1.0, 0.0}}, false, false), doctest::Contains("must be positive"), Error);
  CHECK_THROWS_WITH_AS(m.step_ms(uniform(3, 2), false, false), doctest::Contains("does not split evenly"), Error);
  CHECK_THROWS_WITH_AS(GridModel(tiny(), 16, 0, 4, 100.0, {}, {}), doctest::Contains("tensor-parallel group"), Error);
}

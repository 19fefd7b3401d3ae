#include "bench/simulate_grid.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench/grid_model.h"
#include "core/parse_flags.h"
#include "core/random.h"

namespace flextp {
namespace {

struct Scenario {
  std::string name;
  GridSpeeds speed;
};

// The slow rank is the last one, of the last replica, as in the one-dimensional table.
std::vector<Scenario> scenarios(int dp, int tp, double slow) {
  GridSpeeds one(dp, std::vector<double>(tp, 1.0)), node = one, lognormal = one;
  one[dp - 1][tp - 1] = slow;
  for (double& s : node[dp - 1]) s = slow;
  for (int d = 0; d < dp; ++d)
    for (int t = 0; t < tp; ++t) lognormal[d][t] = std::exp(0.3 * rng::normal(d * tp + t, 5, 42));
  char factor[32];
  std::snprintf(factor, sizeof factor, "%gx", 1 / slow);
  return {{std::string("one GPU ") + factor + " slower", one},
          {std::string("one node ") + factor + " slower", node},
          {"log-normal, sigma 0.3", lognormal}};
}

}  // namespace

int simulate_grid_main(int argc, char** argv) {
  CLI::App app{"flextp: predicted step times of data x tensor parallel grids under heterogeneity (a model)"};
  bool grid = true;
  int tp = 8;
  int64_t batch = 512;
  double window_ms = 1000, slow = 0.5;
  Link tp_link{25, 10}, dp_link{12.5, 20};
  std::vector<int> dps{8, 16, 32, 64};
  app.add_flag("--grid", grid, "this table (data x tensor grids) instead of the one-dimensional one");
  app.add_option("--tp", tp, "ranks per tensor-parallel group (one node)")->check(above_zero());
  app.add_option("--dp", dps, "replica counts, e.g. 8,16,32,64")->delimiter(',')->check(above_zero());
  app.add_option("--batch", batch, "windows of 1024 tokens per step over all replicas")->check(above_zero());
  app.add_option("--window-ms", window_ms, "compute of one window on one rank of speed 1, ms")->check(above_zero());
  app.add_option("--slow", slow, "speed of the slow GPU and of the slow node's GPUs")->check(within(1e-3, 1));
  app.add_option("--bandwidth-gbs", tp_link.gbs, "link inside a node (tensor parallel), GB/s")->check(above_zero());
  app.add_option("--latency-us", tp_link.latency_us, "its latency, us")->check(at_least_zero());
  app.add_option("--dp-bandwidth-gbs", dp_link.gbs, "link across nodes (data parallel), GB/s per GPU")
      ->check(above_zero());
  app.add_option("--dp-latency-us", dp_link.latency_us, "its latency, us")->check(at_least_zero());
  CLI11_PARSE(app, argc, argv);

  GPTConfig c;
  c.vocab_size = 50257, c.n_positions = 1024, c.n_layer = 24, c.n_head = 16, c.n_embd = 1024;
  c.mlp_unit = 64;
  const int64_t seq = 1024;
  GridModel m(c, seq, tp, batch, window_ms, tp_link, dp_link);
  std::printf("a model, not a measurement: GPT-2 medium shape (24 x 16 heads, n_embd 1024), %lld windows of %lld tokens\n"
              "per step over all replicas; a window takes %.0f ms on one rank at speed 1 (%.1f ms on a group of %d);\n"
              "tensor-parallel all-reduces at %g GB/s and %g us (2 per layer, %.1f ms per window); the gradient\n"
              "all-reduce of one slot (%.0f MB) over the replicas at %g GB/s and %g us, not overlapped; ms per step\n",
              static_cast<long long>(batch), static_cast<long long>(seq), window_ms, window_ms / tp, tp, tp_link.gbs,
              tp_link.latency_us, m.tp_comm_ms_per_window(), m.slot_gradient_bytes() / 1e6, dp_link.gbs,
              dp_link.latency_us);
  std::printf("%-7s %-22s %8s %8s %8s %8s %8s %7s %7s %7s %9s\n", "grid", "speeds", "even", "migrate", "shares",
              "both", "ideal", "mig", "shares", "both", "both/ideal");
  for (int dp : dps) {
    char name[32];
    std::snprintf(name, sizeof name, "%d x %d", dp, tp);
    if (batch % dp != 0) {
      std::printf("%-7s (skipped: %lld windows do not split evenly over %d replicas)\n", name,
                  static_cast<long long>(batch), dp);
      continue;
    }
    for (const Scenario& s : scenarios(dp, tp, slow)) {
      GridStep g = simulate_grid_step(m, s.speed);
      std::printf("%-7s %-22s %8.0f %8.0f %8.0f %8.0f %8.0f %6.2fx %6.2fx %6.2fx %8.1f%%\n", name, s.name.c_str(), g.even,
                  g.migrate, g.shares, g.both, g.ideal, g.even / g.migrate, g.even / g.shares, g.even / g.both,
                  100 * (g.both / g.ideal - 1));
    }
  }
  std::printf("grid: replicas x ranks per group; even: even split in every group and even window shares (Megatron);\n"
              "migrate: each group balanced by the planner, even shares; shares: even groups, whole windows in\n"
              "proportion to each replica's speed; both: the two; mig, shares, both: speed-up over even\n");
  return 0;
}

}  // namespace flextp

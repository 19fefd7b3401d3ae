// bench/simulate: the planner and the cost model on paper, past what one machine can run.
//  1. Checks the model against the runs of bench/hetero (docs/hetero.json): for each measured
//     scenario it predicts the even split's and migration's step time from the no-straggler
//     run alone, and prints the error.
//  2. Predicts step time under the even split, migration and the ideal bound for 8 to 64 ranks
//     of a GPT-2-medium-sized model (24 layers, 16 heads, n_embd 1024, batch 8 x 1024) with
//     speed traces: one rank 2x slower, a quarter of the ranks 2x slower, and log-normal speeds.
//
//   bench_simulate [--measured docs/hetero.json] [--bandwidth-gbs 25] [--latency-us 10]
//   bench_simulate --grid [...]: data x tensor parallel grids instead (bench/simulate_grid.cpp)
//   bench_simulate --oracle [...]: the balancer against the best static split on 4 ranks
//                  (bench/simulate_oracle.cpp)
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <nlohmann/json.hpp>

#include "bench/simulate_grid.h"
#include "bench/simulate_oracle.h"
#include "core/error.h"
#include "core/parse_flags.h"
#include "core/random.h"
#include "nn/unit_costs.h"
#include "nn/units.h"
#include "parallel/balance/planner.h"

using namespace flextp;

namespace {

struct Prediction {
  double even, migrate, ideal;
};

// Compute-only predictions, scaled so that the even split at equal speeds takes `compute_ms`.
Prediction predict(const GPTConfig& c, int64_t batch, int64_t seq, int ranks, const std::vector<double>& speed,
                   double compute_ms) {
  ModelCosts costs = gpt_model_costs(c, {batch, seq, 2});
  Partition even = Partition::even(unit_groups(c), ranks);
  double unit_speed = predicted_step_ms(even, std::vector<double>(ranks, 1.0), costs) / compute_ms;
  std::vector<double> s;
  for (double x : speed) s.push_back(x * unit_speed);
  Partition balanced = balanced_partition(even, s, costs);
  return {predicted_step_ms(even, s, costs), predicted_step_ms(balanced, s, costs), ideal_step_ms(even, s, costs)};
}

// Ring all-reduce of `bytes` over n ranks.
double allreduce_ms(double bytes, int n, double gbs, double latency_us) {
  if (n == 1) return 0;
  return 2.0 * (n - 1) * (latency_us / 1000.0 + bytes / n / (gbs * 1e6));
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--grid") return simulate_grid_main(argc, argv);
    if (std::string(argv[i]) == "--oracle") return simulate_oracle_main(argc, argv);
  }
  CLI::App app{"flextp: predicted step times under heterogeneity"};
  std::string measured = "docs/hetero.json";
  double gbs = 25, latency_us = 10;
  app.add_option("--measured", measured, "bench/hetero's results to check the model against");
  app.add_option("--bandwidth-gbs", gbs, "link bandwidth for the large-scale table, GB/s")->check(above_zero());
  app.add_option("--latency-us", latency_us, "link latency, microseconds")->check(at_least_zero());
  app.footer("--grid: data x tensor parallel grids instead (bench_simulate --grid --help); --oracle: the balancer "
             "against the best static split on 4 ranks (bench_simulate --oracle --help)");
  CLI11_PARSE(app, argc, argv);
  std::ifstream in(measured);
  if (in) {
    nlohmann::json runs = nlohmann::json::parse(in, nullptr, false);
    GPTConfig small;  // the model bench/hetero trains
    small.mlp_unit = 32;
    std::printf("model against measurement (%s): predicted from the no-straggler run alone\n", measured.c_str());
    std::printf("%5s %6s %10s %10s %7s %10s %10s %7s\n", "ranks", "factor", "even", "predicted", "error",
                "migrate", "predicted", "error");
    for (const auto& r : runs) {
      // bench/hetero.py's newer files (modes, contention) lack the nominal factor; the balancer's
      // closed loop measures those cases (bench/oracle.py).
      if (!r.contains("factor") || !r.contains("compute0") || !r.contains("other0")) {
        std::printf("(a case without a nominal factor: see bench/oracle.py)\n");
        continue;
      }
      int n = r["ranks"];
      double f = r["factor"], compute0 = r["compute0"], other0 = r["other0"];
      std::vector<double> speed(n, 1.0);
      speed[n - 1] = 1.0 / f;
      Prediction p = predict(small, 16, 128, n, speed, compute0);
      double even = p.even + other0, mig = p.migrate + other0;
      double me = r["even"], mm = r["migrate"];
      std::printf("%5d %6g %10.1f %10.1f %6.1f%% %10.1f %10.1f %6.1f%%\n", n, f, me, even, 100 * (even / me - 1), mm,
                  mig, 100 * (mig / mm - 1));
    }
    std::printf("\n");
  } else {
    std::printf("(no %s: run bench/hetero.py first to check the model against measurements)\n\n", measured.c_str());
  }

  GPTConfig big;
  big.vocab_size = 50257, big.n_positions = 1024, big.n_layer = 24, big.n_head = 16, big.n_embd = 1024;
  big.mlp_unit = 64;
  const int64_t batch = 8, seq = 1024;
  // Compute per step on one rank of the even split, assumed 1000 ms at 8 ranks (scales as 8 / n).
  std::printf("GPT-2 medium shape (24 x 16 heads, n_embd 1024, batch 8 x 1024), compute 8000 ms / ranks at equal\n"
              "speed, ring all-reduce at %.0f GB/s and %.0f us (2 per layer); ms per step\n", gbs, latency_us);
  std::printf("%5s %-24s %9s %9s %9s %9s %9s\n", "ranks", "speeds", "even", "migrate", "ideal", "even/mig", "mig/ideal");
  for (int n : {8, 16, 32, 64}) {
    double comm = 2 * big.n_layer * allreduce_ms(4.0 * batch * seq * big.n_embd, n, gbs, latency_us);
    std::vector<std::pair<std::string, std::vector<double>>> traces;
    std::vector<double> one(n, 1.0), quarter(n, 1.0), lognormal(n);
    one[n - 1] = 0.5;
    for (int r = 0; r < n / 4; ++r) quarter[r] = 0.5;
    for (int r = 0; r < n; ++r) lognormal[r] = std::exp(0.3 * rng::normal(r, 5, 42));
    traces = {{"one rank 2x slower", one}, {"a quarter 2x slower", quarter}, {"log-normal, sigma 0.3", lognormal}};
    for (const auto& [name, speed] : traces) {
      Prediction p = predict(big, batch, seq, n, speed, 8000.0 / n);
      std::printf("%5d %-24s %9.1f %9.1f %9.1f %8.2fx %8.1f%%\n", n, name.c_str(), p.even + comm, p.migrate + comm,
                  p.ideal + comm, (p.even + comm) / (p.migrate + comm), 100 * ((p.migrate + comm) / (p.ideal + comm) - 1));
    }
  }
  return 0;
}

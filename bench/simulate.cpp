// bench/simulate: the planner and the cost model on paper, past what one machine can run.
//  1. Checks the model against the runs of bench/hetero (docs/hetero.json): for each measured
//     scenario it predicts the even split's and migration's step time from the no-straggler
//     run alone, and prints the error.
//  2. Predicts step time under the even split, migration and the ideal bound for 8 to 64 ranks
//     of a GPT-2-medium-sized model (24 layers, 16 heads, n_embd 1024, batch 8 x 1024) with
//     speed traces: one rank 2x slower, a quarter of the ranks 2x slower, and log-normal speeds.
//  3. --predict: one measured case (bench/predict.py runs them): from the per-rank compute times,
//     bursts (ms and shape), holds and descheduled times measured in the even split, and the time outside
//     compute, the even split's and migration's step as the planner models them (the partition
//     --balance migrate's planner ends in: its target, or the even split where the move does not
//     pay), as one JSON line.
//
//   bench_simulate [--measured docs/hetero.json] [--bandwidth-gbs 25] [--latency-us 10]
//   bench_simulate --grid [...]: data x tensor parallel grids instead (bench/simulate_grid.cpp)
//   bench_simulate --oracle [...]: the balancer against the best static split on 4 ranks
//                  (bench/simulate_oracle.cpp)
//   bench_simulate --predict --compute-ms 70,140 --burst-ms 0,4 [--burst-shape 1/1/1/1/1/1/1/1,0.8/.../1.3]
//                  [--hold-ms 0,20 --descheduled-ms 0,30] --other-ms 30
//                  [--n-layer 4 --n-head 4 --n-embd 128 --vocab 256 --mlp-unit 32 --batch 16 --seq-len 128]
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <nlohmann/json.hpp>

#include "bench/simulate_grid.h"
#include "bench/simulate_oracle.h"
#include "core/error.h"
#include "core/text_fields.h"
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
  UnitCosts costs = gpt_unit_costs(c, batch, seq, 2);
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

// Mode 3: the measured even split's per-rank compute and bursts -> the predicted even and migrated
// steps, as the migrate policy would plan them.
int predict_measured(const GPTConfig& c, int64_t batch, int64_t seq, const std::vector<double>& compute_ms,
                     std::vector<double> burst_ms, std::vector<double> hold_ms,
                     std::vector<double> descheduled_ms, const std::vector<std::string>& shape_args,
                     double other_ms) {
  const int n = static_cast<int>(compute_ms.size());
  FLEXTP_CHECK(n >= 1, "--predict needs --compute-ms, one per rank");
  FLEXTP_CHECK(shape_args.empty() || static_cast<int>(shape_args.size()) == n, "--burst-shape has ",
               shape_args.size(), " shapes for ", n, " ranks (--compute-ms)");
  std::vector<std::vector<double>> shapes;
  for (const std::string& arg : shape_args) {
    std::vector<double> shape;
    for (const std::string& value : split_fields(arg, '/')) {
      std::optional<double> x = whole_double(value);
      FLEXTP_CHECK(x && std::isfinite(*x) && *x > 0, "--burst-shape: '", value, "' in '", arg,
                   "' is not a positive number");
      shape.push_back(*x);
    }
    shapes.push_back(shape);
  }
  if (burst_ms.empty()) burst_ms.assign(n, 0.0);
  if (hold_ms.empty()) hold_ms.assign(n, 0.0);
  if (descheduled_ms.empty()) descheduled_ms.assign(n, 0.0);
  FLEXTP_CHECK(static_cast<int>(descheduled_ms.size()) == n, "--descheduled-ms has ", descheduled_ms.size(),
               " values for ", n, " ranks (--compute-ms)");
  FLEXTP_CHECK(static_cast<int>(burst_ms.size()) == n, "--burst-ms has ", burst_ms.size(), " values for ", n,
               " ranks (--compute-ms)");
  FLEXTP_CHECK(static_cast<int>(hold_ms.size()) == n, "--hold-ms has ", hold_ms.size(), " values for ", n,
               " ranks (--compute-ms)");
  UnitCosts costs = gpt_unit_costs(c, batch, seq, 2);
  Partition even = Partition::even(unit_groups(c), n);
  std::vector<double> work = rank_work(even, costs), speed;
  for (int r = 0; r < n; ++r) {
    FLEXTP_CHECK(compute_ms[r] > 0, "--compute-ms must be positive, got ", compute_ms[r]);
    speed.push_back(work[r] / compute_ms[r]);
  }
  CommCostModel free;  // what moving costs barely matters over the planner's horizon
  free.fits["p2p"] = {0.0, 0.0};
  Partition target =
      plan_migration(even, speed, costs, free, PlannerOptions{}, burst_ms, hold_ms, descheduled_ms, shapes).target;
  auto step = [&](const Partition& p) {
    return predicted_step_ms(p, speed, costs, burst_ms, hold_ms, descheduled_ms, shapes);
  };
  auto waits = [&](const Partition& p) { return burst_wait_ms(p, speed, costs, burst_ms, hold_ms, descheduled_ms, shapes); };
  nlohmann::json out = {{"even", step(even) + other_ms},
                        {"migrate", step(target) + other_ms},
                        {"ideal", ideal_step_ms(even, speed, costs) + other_ms},
                        {"burst_wait_even", waits(even)},
                        {"burst_wait_migrate", waits(target)},
                        {"target", target.str()}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
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
  app.add_option("--bandwidth-gbs", gbs, "link bandwidth for the large-scale table, GB/s")->check(CLI::PositiveNumber);
  app.add_option("--latency-us", latency_us, "link latency, microseconds")->check(CLI::NonNegativeNumber);
  app.footer("--grid: data x tensor parallel grids instead (bench_simulate --grid --help); --oracle: the balancer "
             "against the best static split on 4 ranks (bench_simulate --oracle --help)");
  bool predict_mode = false;
  std::vector<double> compute_ms, burst_ms, hold_ms, descheduled_ms;
  std::vector<std::string> burst_shapes;
  double other_ms = 0;
  GPTConfig measured_model;  // train's defaults
  int64_t measured_batch = 16, measured_seq = 128;
  app.add_flag("--predict", predict_mode, "predict one measured case (see --compute-ms) and print it as JSON");
  app.add_option("--compute-ms", compute_ms, "--predict: each rank's compute ms per step in the even split")
      ->delimiter(',');
  app.add_option("--burst-ms", burst_ms, "--predict: each rank's burst ms per step in the even split (default 0): how often it arrives "
                 "first (with --hold-ms, --descheduled-ms); the waits come from --burst-shape")
      ->delimiter(',');
  app.add_option("--burst-shape", burst_shapes,
                 "--predict: each rank's burst shape in the even split, values joined by '/' (the metrics' "
                 "burst_shape; default steady)")
      ->delimiter(',');
  app.add_option("--hold-ms", hold_ms,
                 "--predict: each rank's hold ms per step in the even split (the metrics' hold_ms; default 0)")
      ->delimiter(',');
  app.add_option("--descheduled-ms", descheduled_ms,
                 "--predict: each rank's ms descheduled inside collectives per step in the even split (the metrics' "
                 "descheduled_ms; default 0)")
      ->delimiter(',');
  app.add_option("--other-ms", other_ms, "--predict: ms per step outside compute")->check(CLI::NonNegativeNumber);
  app.add_option("--n-layer", measured_model.n_layer, "--predict: the model trained")->check(CLI::PositiveNumber);
  app.add_option("--n-head", measured_model.n_head, "--predict: the model trained")->check(CLI::PositiveNumber);
  app.add_option("--n-embd", measured_model.n_embd, "--predict: the model trained")->check(CLI::PositiveNumber);
  app.add_option("--vocab", measured_model.vocab_size, "--predict: the model trained")->check(CLI::PositiveNumber);
  app.add_option("--mlp-unit", measured_model.mlp_unit, "--predict: the model trained")->check(CLI::PositiveNumber);
  app.add_option("--batch", measured_batch, "--predict: windows per step")->check(CLI::PositiveNumber);
  app.add_option("--seq-len", measured_seq, "--predict: tokens per window")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (predict_mode) {
    measured_model.n_positions = measured_seq;
    try {
      return predict_measured(measured_model, measured_batch, measured_seq, compute_ms, burst_ms, hold_ms,
                              descheduled_ms, burst_shapes, other_ms);
    } catch (const Error& e) {
      std::fprintf(stderr, "bench_simulate: %s\n", e.what());
      return 1;
    }
  }

  std::ifstream in(measured);
  if (in) {
    nlohmann::json runs = nlohmann::json::parse(in, nullptr, false);
    GPTConfig small;  // the model bench/hetero trains
    small.mlp_unit = 32;
    std::printf("model against measurement (%s): predicted from the no-straggler run alone\n", measured.c_str());
    std::printf("%5s %6s %10s %10s %7s %10s %10s %7s\n", "ranks", "factor", "even", "predicted", "error",
                "migrate", "predicted", "error");
    for (const auto& r : runs) {
      // bench/hetero.py's newer files (modes, contention) lack the nominal factor: their cases
      // are checked by bench/predict.py from measured speeds and bursts instead.
      if (!r.contains("factor") || !r.contains("compute0") || !r.contains("other0")) {
        std::printf("(a case without a nominal factor: see bench/predict.py)\n");
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

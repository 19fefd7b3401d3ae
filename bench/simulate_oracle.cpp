// bench_simulate --oracle: issue 25's oracle on 4 ranks, on paper (on 2 cores 4 real ranks cannot
// be measured honestly). Step times come from a true machine (bench/true_machine.h) that departs
// from the planner's model as real machines do: replicated work at each rank's own speed, a
// fixed overhead per unit, collectives, seeded noise. Each policy runs through the real Balancer,
// one per rank, each rank a thread with a communicator of its own (bench/thread_ranks.h), fed
// the true machine's times as the monitor's rows (mean-speed inputs only: no bursts, holds or
// sync points), so the closed loop (trials.h: act, measure, keep or undo, the learned correction,
// tries of the model's best move) decides as in training. Each rank's units come from its own
// model's parameters, so resizing (the hybrid's) shortens the true step as it would a real one.
// The step after a move runs its compute `kSettle` slower (fresh buffers), and the move's transfer
// (kLink, which the balancer's cost model also knows) is added to its wall time, not to what
// the monitor measures (as in train).
// Per case: the oracle (the best static split of all, exact, noise free, at the speeds after the
// onset: true_machine.h best_split), the best split of a --tp-weights grid (--levels per rank),
// the even split, the planner's split at the true speeds, each policy and the fluid ideal; the
// medians of steps after --skip (after the onset for late2), the median of --seeds runs; each
// policy against the oracle and the even split, its moves and trials.
//
//   bench_simulate --oracle [--cases slow2,slow3,two2,mixed,late2] [--policies migrate,hybrid]
//                  [--steps 40] [--skip 10] [--seeds 3] [--noise 0.02] [--levels 1,1.5,2,3,4]
//                  [--model-ms 160] [--unit-overhead-ms 0.1] [--collectives-ms 10] [--verbose]
//                  [--n-layer 4 --n-head 4 --n-embd 128 --vocab 256 --mlp-unit 32 --batch 16 --seq-len 128]
#include "bench/simulate_oracle.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/thread_ranks.h"
#include "bench/true_machine.h"
#include "core/error.h"
#include "core/parse_flags.h"
#include "core/random.h"
#include "core/text_fields.h"
#include "core/timer.h"
#include "nn/gpt.h"
#include "nn/unit_costs.h"
#include "nn/units.h"
#include "parallel/balance/active_units.h"
#include "parallel/balance/balancer.h"

namespace flextp {
namespace {

constexpr int kRanks = 4;
constexpr double kSettle = 0.1;            // the step after a move: compute 10% slower
const AlphaBeta kLink{0.1, 1.0 / 2e6};     // 0.1 ms + bytes at 2 GB/s

struct Case {
  std::string name, what;
  std::vector<double> speed;   // from the onset on
  int64_t onset = 0;           // before it, every rank at speed 1
};

std::vector<Case> all_cases() {
  return {{"slow2", "rank 3 2x slow", {1, 1, 1, 0.5}, 0},
          {"slow3", "rank 3 3x slow", {1, 1, 1, 1.0 / 3}, 0},
          {"two2", "ranks 2 and 3 2x slow", {1, 1, 0.5, 0.5}, 0},
          {"mixed", "speeds 1, 1.5, 2, 3", {1.0 / 3, 0.5, 2.0 / 3, 1}, 0},
          {"late2", "rank 3 2x slow from step 30", {1, 1, 1, 0.5}, 30}};
}

std::vector<double> speed_at(const Case& c, int64_t step) {
  return step < c.onset ? std::vector<double>(c.speed.size(), 1.0) : c.speed;
}

struct Setup {
  GPTConfig model;
  TrueMachine machine;
  CommCostModel link;
  int64_t steps = 40, skip = 10;
  int seeds = 3;
  double noise = 0.02;
};

std::vector<double> noise_at(const Setup& s, int64_t step, uint64_t seed) {
  std::vector<double> f;
  for (int r = 0; r < kRanks; ++r) f.push_back(std::max(0.5, 1 + s.noise * rng::normal(step, r, seed)));
  return f;
}

// One run: the wall time of every step, and what the balancer did.
struct Run {
  std::vector<double> step_ms;
  int moves = 0, resized_steps = 0, explored = 0;
  std::map<std::string, int> trials;  // "try", "kept", "undone"
  Partition final_split;
  std::vector<std::string> log;  // every step that changed something or judged a change
};

double measured_ms(const Run& run, int64_t start) {
  return median(std::vector<double>(run.step_ms.begin() + start, run.step_ms.end()));
}

// "head 4:4:4:4 mlp 18:18:18:10 vocab 1:1:1:1": units per rank of each kind, over the layers.
std::string kinds_of(const Partition& p, const std::vector<UnitGroup>& groups) {
  std::string out;
  for (UnitKind k : kUnitKinds) {
    out += std::string(out.empty() ? "" : " ") + unit_kind_name(k) + " ";
    for (int r = 0; r < p.ranks(); ++r) out += (r ? ":" : "") + std::to_string(units_per_kind(groups, p, r).held[k]);
  }
  return out;
}

Run run_static(const Setup& s, const Case& c, const Partition& p, uint64_t seed, int64_t steps) {
  Run out;
  const UnitRuns runs = units_run(p);
  for (int64_t k = 0; k < steps; ++k)
    out.step_ms.push_back(true_step(s.machine, runs, speed_at(c, k), noise_at(s, k, seed)).step_ms);
  out.final_split = p;
  return out;
}

// Four ranks, each a real Balancer on a model of the units it holds, deciding in a thread of its own.
class SimulatedRanks {
 public:
  SimulatedRanks(const Setup& s, const std::string& policy) : meeting_(kRanks) {
    BalanceOptions o;
    o.policy = policy;
    o.resize.priority = "norm";  // importance from the weights: the simulation runs no backward
    const Partition even = Partition::even(s.machine.model.groups, kRanks);
    for (int r = 0; r < kRanks; ++r) {
      comms_.push_back(std::make_unique<ThreadRank>(meeting_, r));
      models_.push_back(std::make_unique<GPT>(s.model, LocalUnits::of_rank(s.model, even, r), comms_[r].get()));
      params_.push_back(models_[r]->parameters());
      balancers_.push_back(std::make_unique<Balancer>(*comms_[r], s.machine.model, even, s.link, o));
    }
  }

  // Every rank's decision after a step that took `step_ms`, rank r computing compute_ms[r].
  std::vector<BalanceStep> after_step(const std::vector<double>& compute_ms, double step_ms, int64_t step) {
    std::vector<RankReport> rows;
    for (int r = 0; r < kRanks; ++r) rows.push_back(balancers_[r]->report(compute_ms[r], step_ms - compute_ms[r]));
    std::vector<BalanceStep> out(kRanks);
    std::vector<std::exception_ptr> failed(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
      threads.emplace_back([&, r] {
        try {
          balancers_[r]->observe_gradients(params_[r], step);
          out[r] = balancers_[r]->after_step(step + 1, rows, params_[r], {"m", "v"});
        } catch (...) {
          failed[r] = std::current_exception();
          meeting_.fail();
        }
      });
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : failed)
      if (e) std::rethrow_exception(e);
    for (int r = 1; r < kRanks; ++r)
      FLEXTP_CHECK(out[r].choice == out[0].choice && balancers_[r]->partition() == balancers_[0]->partition(),
                   "the simulated ranks disagree at step ", step, ": rank 0 chose ", out[0].choice, ", rank ", r, " ",
                   out[r].choice);
    return out;
  }

  // The units each rank runs now: those its partition gives it, less those it skips.
  UnitRuns runs() const {
    UnitRuns out = units_run(balancers_[0]->partition());
    for (int r = 0; r < kRanks; ++r)
      for (auto& [group, n] : out[r]) {
        std::vector<Parameter*> ps = group_parameters(params_[r], group);
        if (!ps.empty()) n = std::min<int64_t>(n, ps.front()->active_units());
      }
    return out;
  }

  const Partition& partition() const { return balancers_[0]->partition(); }

 private:
  ThreadMeeting meeting_;
  std::vector<std::unique_ptr<ThreadRank>> comms_;
  std::vector<std::unique_ptr<GPT>> models_;
  std::vector<std::vector<Parameter*>> params_;
  std::vector<std::unique_ptr<Balancer>> balancers_;
};

Run run_policy(const Setup& s, const Case& c, const std::string& policy, uint64_t seed, int64_t steps) {
  Run out;
  SimulatedRanks ranks(s, policy);
  double transfer_ms = 0;
  bool settling = false;
  for (int64_t k = 0; k < steps; ++k) {
    std::vector<double> noise = noise_at(s, k, seed);
    if (settling)
      for (double& f : noise) f *= 1 + kSettle;
    const UnitRuns runs = ranks.runs();
    const TrueStep t = true_step(s.machine, runs, speed_at(c, k), noise);
    out.step_ms.push_back(t.step_ms + transfer_ms);
    if (runs != units_run(ranks.partition())) ++out.resized_steps;
    const BalanceStep d = ranks.after_step(t.compute_ms, t.step_ms, k).front();
    const bool moved = d.action == Action::migrate;  // a move, or the undo of one
    out.moves += moved;
    settling = moved;
    transfer_ms = moved ? s.link.transfer_ms(static_cast<double>(d.moved_bytes)) : 0.0;
    if (!d.trial.empty()) ++out.trials[d.trial];
    out.explored += d.explored;
    if (d.choice != "keep" || !d.trial.empty()) {
      std::string line = "step " + std::to_string(k) + ": " + d.choice + (d.trial.empty() ? "" : " (" + d.trial + ")");
      if (moved) line += "; " + d.plan.str() + "; now " + kinds_of(ranks.partition(), s.machine.model.groups);
      if (d.trial == "kept" || d.trial == "undone") {
        char judged[128];
        std::snprintf(judged, sizeof judged, "; measured %.1f -> %.1f ms, predicted gain %.1f%%; correction",
                      d.trial_before_ms, d.trial_after_ms, 100 * d.predicted_gain);
        line += judged;
        for (double x : d.correction) line += " " + std::to_string(x).substr(0, 5);
      }
      out.log.push_back(line);
    }
  }
  out.final_split = ranks.partition();
  return out;
}

std::string weights_text(const std::vector<double>& w) {
  std::string out;
  char buf[32];
  for (double x : w) {
    std::snprintf(buf, sizeof buf, "%g", x);
    out += (out.empty() ? "" : ",") + std::string(buf);
  }
  return out;
}

std::string percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * (ratio - 1));
  return buf;
}

struct PolicyResult {
  double ms = 0;
  std::vector<int> moves, resized;
  std::map<std::string, int> trials;
  int explored = 0;
  std::string final_split;
};

std::string trials_text(const PolicyResult& p) {
  std::string out;
  for (const char* e : {"try", "kept", "undone"}) {
    auto it = p.trials.find(e);
    out += std::string(out.empty() ? "" : ", ") + e + " " + std::to_string(it == p.trials.end() ? 0 : it->second);
  }
  return out + (p.explored ? " (" + std::to_string(p.explored) + " explored)" : "");
}

std::string counts_text(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : "/") + std::to_string(x);
  return out;
}

}  // namespace

int simulate_oracle_main(int argc, char** argv) {
  CLI::App app{"flextp: the balancer against the best static split on 4 ranks, on paper (a true machine model)"};
  bool oracle = true;
  Setup s;
  std::string cases = "slow2,slow3,two2,mixed,late2";
  std::vector<std::string> policies{"migrate", "hybrid"};
  std::vector<double> levels{1, 1.5, 2, 3, 4};
  double model_ms = 160, overhead_ms = 0.1, collectives_ms = 10;
  int64_t batch = 16, seq = 128;
  bool verbose = false;
  app.add_flag("--verbose", verbose, "every step of seed 0 that changed something or judged a change");
  app.add_flag("--oracle", oracle, "this table (4 ranks against the oracle) instead of the model's checks");
  app.add_option("--cases", cases, "comma-separated: slow2, slow3, two2, mixed, late2");
  app.add_option("--policies", policies, "--balance policies, comma-separated")->delimiter(',');
  app.add_option("--steps", s.steps, "steps measured after the onset")->check(above_zero());
  app.add_option("--skip", s.skip, "steps left out of the median at the start")->check(at_least_zero());
  app.add_option("--seeds", s.seeds, "runs per cell (seeds of the noise), their median reported")->check(above_zero());
  app.add_option("--noise", s.noise, "each rank's compute per step times 1 + noise x N(0, 1)")->check(within(0, 0.3));
  app.add_option("--levels", levels, "the weights each rank takes in the static grid")
      ->delimiter(',')
      ->check(above_zero());
  app.add_option("--model-ms", model_ms, "the whole model's compute at speed 1, ms per step")->check(above_zero());
  app.add_option("--unit-overhead-ms", overhead_ms, "per unit run per step, whatever the speed")
      ->check(at_least_zero());
  app.add_option("--collectives-ms", collectives_ms, "per step, every rank")->check(at_least_zero());
  app.add_option("--n-layer", s.model.n_layer, "the model")->check(above_zero());
  app.add_option("--n-head", s.model.n_head, "the model")->check(above_zero());
  app.add_option("--n-embd", s.model.n_embd, "the model")->check(above_zero());
  app.add_option("--vocab", s.model.vocab_size, "the model")->check(above_zero());
  app.add_option("--mlp-unit", s.model.mlp_unit, "the model")->check(above_zero());
  app.add_option("--batch", batch, "windows per step")->check(above_zero());
  app.add_option("--seq-len", seq, "tokens per window")->check(above_zero());
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<Case> chosen;
    for (const std::string& name : split_fields(cases, ',')) {
      std::vector<Case> known = all_cases();
      auto it = std::find_if(known.begin(), known.end(), [&](const Case& c) { return c.name == name; });
      FLEXTP_CHECK(it != known.end(), "--cases: no case '", name, "'; the cases are slow2, slow3, two2, mixed, late2");
      chosen.push_back(*it);
      FLEXTP_CHECK(std::max(s.skip, it->onset) < s.steps + it->onset, "--skip ", s.skip, " leaves no step of ",
                   s.steps + it->onset, " to measure in ", name);
    }
    for (const std::string& policy : policies) {
      BalanceOptions o;
      o.policy = policy;
      make_policy(o);  // an unknown name fails here, before any run
    }
    s.model.n_positions = seq;
    s.model.validate();
    s.machine.model = gpt_model_costs(s.model, {batch, seq, 2});
    double total = s.machine.model.replicated_work;
    for (const UnitGroup& g : s.machine.model.groups) total += g.units * g.cost.work;
    s.machine.work_per_ms = total / model_ms;
    s.machine.unit_overhead_ms = overhead_ms;
    s.machine.collectives_ms = collectives_ms;
    s.link.fits[method_name(TransferMethod::PointToPoint)] = kLink;
    const Partition even = Partition::even(s.machine.model.groups, kRanks);

    std::printf("4 ranks on paper: %s, batch %lld x %lld; the true machine: the whole model %.0f ms at speed 1, "
                "replicated work at each rank's own speed, %.2f ms per unit run, %.1f ms of collectives per step, "
                "noise %.0f%%; moves at 2 GB/s\n",
                s.model.str().c_str(), static_cast<long long>(batch), static_cast<long long>(seq), model_ms,
                overhead_ms, collectives_ms, 100 * s.noise);
    std::string table = "| case | best static split | best of the --tp-weights grid | even | planner's split | ideal |",
                rule = "|---|---|---|---|---|---|";
    for (const std::string& p : policies) table += " " + p + " |", rule += "---|";
    table += "\n" + rule + "\n";
    for (const Case& c : chosen) {
      const int64_t steps = s.steps + c.onset, start = std::max(s.skip, c.onset);
      const Partition best = best_split(s.machine, c.speed);
      const std::vector<StaticSplit> grid = static_splits(s.machine, c.speed, levels);
      std::vector<double> true_speed;
      for (double x : c.speed) true_speed.push_back(x * s.machine.work_per_ms);
      const Partition planner = balanced_partition(even, true_speed, s.machine.model);
      auto static_ms = [&](const Partition& p) {
        std::vector<double> per_seed;
        for (int seed = 0; seed < s.seeds; ++seed) per_seed.push_back(measured_ms(run_static(s, c, p, seed, steps), start));
        return median(per_seed);
      };
      const double oracle = static_ms(best), grid_ms = static_ms(grid.front().partition), even_ms = static_ms(even),
                   planner_ms = static_ms(planner), ideal = fluid_ideal_ms(s.machine, c.speed);
      std::printf("\n%s: %s; steps %lld-%lld, medians of %d seed(s)\n", c.name.c_str(), c.what.c_str(),
                  static_cast<long long>(start + 1), static_cast<long long>(steps), s.seeds);
      std::printf("  best static split (%s) %.1f ms | even %.1f | planner's split (%s) %.1f | ideal %.1f (noise free)\n",
                  kinds_of(best, s.machine.model.groups).c_str(), oracle, even_ms, kinds_of(planner, s.machine.model.groups).c_str(),
                  planner_ms, ideal);
      std::printf("  --tp-weights grid: %zu partitions of %zu weight ratios; best %s (%s) %.1f ms; fastest noise free:",
                  grid.size(), weight_grid(levels, kRanks).size(), weights_text(grid.front().weights).c_str(),
                  kinds_of(grid.front().partition, s.machine.model.groups).c_str(), grid_ms);
      for (size_t i = 0; i < std::min<size_t>(3, grid.size()); ++i)
        std::printf(" %s %.1f;", weights_text(grid[i].weights).c_str(), grid[i].step_ms);
      std::printf("\n");
      char cell[256];
      std::snprintf(cell, sizeof cell, "| %s | %.1f ms | %s: %.1f | %.1f | %.1f | %.1f |", c.what.c_str(), oracle,
                    weights_text(grid.front().weights).c_str(), grid_ms, even_ms, planner_ms, ideal);
      table += cell;
      for (const std::string& policy : policies) {
        PolicyResult r;
        std::vector<double> per_seed;
        for (int seed = 0; seed < s.seeds; ++seed) {
          Run run = run_policy(s, c, policy, seed, steps);
          per_seed.push_back(measured_ms(run, start));
          r.moves.push_back(run.moves);
          r.resized.push_back(run.resized_steps);
          for (const auto& [e, n] : run.trials) r.trials[e] += n;
          r.explored += run.explored;
          if (seed == 0) r.final_split = kinds_of(run.final_split, s.machine.model.groups);
          if (seed == 0 && verbose)
            for (const std::string& line : run.log) std::printf("    %s %s\n", policy.c_str(), line.c_str());
        }
        r.ms = median(per_seed);
        std::printf("  %-8s %.1f ms: %s vs the best split, %s vs even; moves %s, resized steps %s; trials %s over %d "
                    "run(s); seed 0 ends at %s\n",
                    policy.c_str(), r.ms, percent(r.ms / oracle).c_str(), percent(r.ms / even_ms).c_str(),
                    counts_text(r.moves).c_str(), counts_text(r.resized).c_str(), trials_text(r).c_str(), s.seeds,
                    r.final_split.c_str());
        const bool resized = *std::max_element(r.resized.begin(), r.resized.end()) > 0;
        std::snprintf(cell, sizeof cell, " %.1f (%s; %s vs even; moves %s;%s %s) |", r.ms, percent(r.ms / oracle).c_str(),
                      percent(r.ms / even_ms).c_str(), counts_text(r.moves).c_str(),
                      resized ? (" resized steps " + counts_text(r.resized) + ";").c_str() : "", trials_text(r).c_str());
        table += cell;
      }
      table += "\n";
    }
    std::printf("\n%s", table.c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_simulate: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace flextp

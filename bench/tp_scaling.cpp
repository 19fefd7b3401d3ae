// bench/tp_scaling: step time and the share of it spent in communication for TP = 1, 2 and 4
// (oversubscribed on a small machine), and the bytes one repartition moves against the least
// possible (the bytes of the units whose owner changed, with their Adam state).
//
//   bench_tp_scaling [--ranks 1,2,4] [--steps 10]      (runs mpirun itself, one run per size)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/timer.h"
#include "core/parse_flags.h"
#include "core/random.h"
#include "nn/gpt.h"
#include "optim/optimizer.h"
#include "parallel/balance/step_clock.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/tp/repartition.h"

using namespace flextp;

namespace {

int worker(int steps) {
  std::unique_ptr<Communicator> base = make_mpi_communicator();
  StepClock comm(*base, SlowdownSchedule());  // measures the time spent inside collectives
  Communicator* comm_ptr = &comm;
  GPTConfig c;  // the default model: 4 layers, 4 heads, n_embd 128, byte vocabulary
  Partition part = Partition::even(unit_groups(c), comm.size());
  GPT model(c, LocalUnits::of_rank(c, part, comm.rank()), comm_ptr);
  AdamW opt({});
  std::vector<Parameter*> params = model.parameters();
  std::vector<int32_t> ids(16 * 128);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(rng::uniform(i, 1, 1) * 256);
  Tensor x = Tensor::from_vector(ids, {16, 128});
  auto step = [&] {
    model.loss(x, x).backward();
    opt.step(params, 1e-4);
    for (Parameter* p : params) p->value.zero_grad();
  };
  for (int i = 0; i < 3; ++i) step();
  std::vector<double> times, comm_share;
  for (int i = 0; i < steps; ++i) {
    comm.untimed().barrier();
    comm.begin_step(i);
    double t0 = bench::now_ms();
    step();
    comm.end_segment();
    double ms = bench::now_ms() - t0;
    times.push_back(ms);
    comm_share.push_back(comm.wait_ms() / ms);
  }
  std::sort(times.begin(), times.end());
  std::sort(comm_share.begin(), comm_share.end());
  // Repartition: even -> 3:1:... -> even, timing both and counting bytes.
  std::vector<double> w(comm.size(), 1.0);
  w[0] = 3.0;
  Partition skewed = Partition::proportional(unit_groups(c), w);
  int64_t there = repartition(params, part, skewed, opt.slot_names(), &comm);
  int64_t back = repartition(params, skewed, part, opt.slot_names(), &comm);
  int64_t units_moved = 0;
  for (const auto& [group, owners] : skewed.groups())
    for (size_t u = 0; u < owners.size(); ++u) units_moved += 2 * (part.owners(group)[u] != owners[u]);
  if (comm.rank() == 0)
    std::printf("%s\n", nlohmann::json({{"ranks", comm.size()},
                                        {"ms_per_step", times[times.size() / 2]},
                                        {"comm_share", comm_share[comm_share.size() / 2]},
                                        {"moved_bytes", there + back},
                                        {"units_moved", units_moved}})
                            .dump()
                            .c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<MpiRuntime> mpi;
  if (launched_by_mpi()) mpi = std::make_unique<MpiRuntime>(&argc, &argv);
  CLI::App app{"flextp tensor-parallel scaling on the CPU"};
  std::string ranks = "1,2,4";
  int steps = 10;
  bool is_worker = false;
  app.add_option("--ranks", ranks, "rank counts to run");
  app.add_option("--steps", steps, "timed steps")->check(above_zero());
  app.add_flag("--worker", is_worker, "internal: run under mpirun");
  CLI11_PARSE(app, argc, argv);
  if (is_worker) return worker(steps);

  std::printf("flextp tp_scaling: default model (4 layers, n_embd 128, batch 16 x 128), float32,\n"
              "2 cores shared by all ranks (threads per rank = 2 / ranks, at least 1)\n");
  std::printf("%5s %12s %12s %14s %8s\n", "ranks", "ms/step", "comm share", "moved bytes",
              "units");
  std::stringstream list(ranks);
  std::string item;
  while (std::getline(list, item, ',')) {
    int n = std::stoi(item);
    int threads = std::max(1, 2 / n);
    std::string cmd = std::string(FLEXTP_MPIRUN) + " -np " + std::to_string(n) + " -x OMP_NUM_THREADS=" +
                      std::to_string(threads) + " " + argv[0] + " --worker --steps " + std::to_string(steps) +
                      " 2>/dev/null";
    FILE* pipe = ::popen(cmd.c_str(), "r");
    char buf[4096];
    std::string last;
    while (pipe && std::fgets(buf, sizeof buf, pipe)) last = buf;
    if (pipe) ::pclose(pipe);
    nlohmann::json r = nlohmann::json::parse(last, nullptr, false);
    if (!r.is_object()) {
      std::printf("%5d  (run failed: %s)\n", n, cmd.c_str());
      continue;
    }
    std::printf("%5d %12.1f %11.1f%% %14lld %8lld\n", n, r["ms_per_step"].get<double>(),
                100 * r["comm_share"].get<double>(), r["moved_bytes"].get<long long>(),
                r["units_moved"].get<long long>());
  }
  return 0;
}

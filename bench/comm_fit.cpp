// The communication model against the transfers a run really makes: fits every primitive as train
// does (the default model's sizes), then times migrations of k units (one way, from the last rank
// to rank 0, as a slow rank gives units away), the row-parallel reduction of one micro-step and
// data-parallel buckets, by each method, and prints predicted against measured, and whether the
// method the model chose was the fastest measured. Under mpirun, e.g. across two hosts:
//
//   scripts/hosts -n 2 --rate 100mbit -- scripts/launch -n 2 -- ./build/bench_comm_fit
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>

#include "core/parse_flags.h"
#include "nn/gpt.h"
#include "nn/mfu.h"
#include "nn/unit_costs.h"
#include "nn/units.h"
#include "parallel/comm/cost_model.h"
#include "parallel/comm/mpi_communicator.h"

using namespace flextp;

namespace {

struct Case {
  std::string what;
  double bytes;
  bool reduction;  // a sum over the ranks (allreduce, rs-ag), else a one-way transfer (p2p, alltoallv)
  bool data_parallel = false;  // the gradient sum, which always all-reduces
};

double measure(Communicator& comm, const Case& c, const std::string& method, int reps) {
  int n = comm.size(), r = comm.rank();
  int64_t floats = std::max<int64_t>(1, static_cast<int64_t>(c.bytes) / 4);
  Tensor t = Tensor::zeros({floats}, DType::F32);
  if (method == "allreduce") return slowest_median_ms(comm, reps, [&] { comm.all_reduce(t); });
  if (method == "rs-ag")
    return slowest_median_ms(comm, reps, [&] { reduce_by(comm, t, ReduceMethod::ReduceScatterAllGather); });
  // A migration: the last rank sends its units to rank 0.
  int from = n - 1, to = 0;
  std::vector<int64_t> sb(n, 0), rb(n, 0);
  if (r == from) sb[to] = floats * 4;
  if (r == to) rb[from] = floats * 4;
  if (method == "p2p")
    return slowest_median_ms(comm, reps, [&] {
      std::vector<Communicator::Transfer> sends, recvs;
      if (r == from) sends.push_back({to, t});
      if (r == to) recvs.push_back({from, t});
      comm.send_recv(sends, recvs);
    });
  Tensor in = Tensor::empty({floats}, DType::F32);
  return slowest_median_ms(comm, reps, [&] { comm.all_to_all_v(t, sb, in, rb); });
}

}  // namespace

int main(int argc, char** argv) {
  MpiRuntime mpi(&argc, &argv);
  CLI::App app{"bench_comm_fit: the fitted communication model against measured transfers"};
  int reps = 5;
  app.add_option("--reps", reps, "timed runs of each transfer (median)")->check(above_zero());
  CLI11_PARSE(app, argc, argv);
  mpi_place_ranks(true);
  std::unique_ptr<Communicator> comm = make_mpi_communicator();
  FLEXTP_CHECK(comm->size() > 1, "bench_comm_fit needs 2 or more ranks (mpirun -np 2)");
  const bool lead = comm->rank() == 0;

  // The default model's sizes, as train/balancer_setup.cpp calibrates them (batch 16 x 128).
  GPTConfig c;
  ModelCosts costs = gpt_model_costs(c, {16, 128, 2});
  double head = costs.unit(UnitRegistry(c).group(UnitKind::Head, 0)->name).bytes;
  double mlp = costs.unit(UnitRegistry(c).group(UnitKind::Mlp, 0)->name).bytes;
  double reduce_bytes = 4.0 * 16 * 128 * c.n_embd, transfer_bytes = head * c.n_layer;
  CommCostModel model =
      calibrate(*comm, calibration_sizes(reduce_bytes, transfer_bytes), reduce_bytes, transfer_bytes, reps);
  if (lead) std::printf("fitted on %d ranks:\n%s\n", comm->size(), model.table().c_str());

  GPT gpt(c);
  const double model_bytes = 4.0 * model_parameters(gpt);  // the default model's gradients
  std::vector<Case> cases = {
      {"migration: 1 head", head, false},
      {"migration: 4 heads (one a layer)", 4 * head, false},
      {"migration: 24 MLP blocks", 24 * mlp, false},
      {"row-parallel reduction (16 x 128 x 128)", reduce_bytes, true},
      {"data-parallel bucket 0.25 MB", 0.25 * (1 << 20), true, true},
      {"data-parallel bucket: all gradients", model_bytes, true, true},
  };
  if (lead)
    std::printf("| transfer | bytes | method | predicted ms | measured ms | error | chosen | fastest measured |\n"
                "|---|---|---|---|---|---|---|---|\n");
  int right = 0, within = 0, rows = 0;
  for (const Case& k : cases) {
    std::vector<std::string> methods = k.reduction ? std::vector<std::string>{"allreduce", "rs-ag"}
                                                   : std::vector<std::string>{"p2p", "alltoallv"};
    std::string chosen = k.data_parallel ? "allreduce"
                         : k.reduction    ? method_name(model.reduce)
                                          : method_name(model.transfer);
    std::vector<double> predicted, measured;
    for (const std::string& m : methods) {
      predicted.push_back(model.fits.at(m).predict_ms(k.bytes));
      measured.push_back(measure(*comm, k, m, reps));
    }
    std::string fastest = measured[0] <= measured[1] ? methods[0] : methods[1];
    // Right when the chosen method measured within 10% of the fastest: the pairs send the same
    // bytes, and closer than that the two are a coin's toss on this machine.
    double chosen_ms = measured[chosen == methods[0] ? 0 : 1];
    right += chosen_ms <= 1.1 * std::min(measured[0], measured[1]);
    for (size_t i = 0; i < methods.size(); ++i) {
      double error = (predicted[i] - measured[i]) / measured[i];
      within += std::fabs(error) <= 0.25;
      ++rows;
      if (lead)
        std::printf("| %s | %.0f KiB | %s | %.3f | %.3f | %+.0f%% | %s | %s |\n", k.what.c_str(), k.bytes / 1024,
                    methods[i].c_str(), predicted[i], measured[i], 100 * error, methods[i] == chosen ? "yes" : "",
                    methods[i] == fastest ? "yes" : "");
    }
  }
  if (lead)
    std::printf("\n%d of %d predictions within 25%% of the measured time; the chosen method measured within 10%% of "
                "the fastest in %d of %zu transfers\n",
                within, rows, right, cases.size());
  return 0;
}

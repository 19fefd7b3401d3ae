#pragma once
// Communication costs: each primitive is timed on the real communicator at the message sizes the
// model uses and fitted as latency + bytes / bandwidth (alpha-beta). The fits choose the
// cheapest way to do each transfer: the row-parallel output reduction (one all-reduce, or a
// reduce-scatter then an all-gather) and the migration transfer (grouped point-to-point or one
// all-to-all-v), and they predict the time of a migration for the planner.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "parallel/comm/communicator.h"

namespace flextp {

struct AlphaBeta {
  double alpha_ms = 0;     // latency
  double ms_per_byte = 0;  // 1 / bandwidth
  double predict_ms(double bytes) const { return alpha_ms + ms_per_byte * bytes; }
};

// The median time of `f` (a collective every rank calls) over `reps` runs after a warm-up, each
// started after a barrier, as the slowest rank measured it: what a transfer costs a step, since
// every rank waits for the last one. A collective itself.
double slowest_median_ms(Communicator& comm, int reps, const std::function<void()>& f);

// Least squares over (bytes, ms) samples, weighted by relative error; both terms kept >= 0.
AlphaBeta fit_alpha_beta(const std::vector<std::pair<double, double>>& samples);

enum class ReduceMethod { AllReduce, ReduceScatterAllGather };
enum class TransferMethod { PointToPoint, AllToAllV };
const char* method_name(ReduceMethod m);
const char* method_name(TransferMethod m);

struct CommCostModel {
  std::map<std::string, AlphaBeta> fits;  // "allreduce", "rs-ag", "p2p", "alltoallv", "broadcast"
  ReduceMethod reduce = ReduceMethod::AllReduce;
  TransferMethod transfer = TransferMethod::PointToPoint;
  // Time to move `bytes` in one migration by the chosen method.
  double transfer_ms(double bytes) const;
  std::string table() const;
};

// The message sizes to time: those of the run (one reduction, one migration) and around them, from
// 64 KiB to 4 MiB. The fit is trusted only where it was measured: over TCP a fit from small
// messages alone missed 1 MiB transfers by 10x (docs/results.md, "The communication model over TCP").
std::vector<int64_t> calibration_sizes(double reduce_bytes, double transfer_bytes);

// Times every primitive `reps` times at each size (median) on tensors of `device` (where training
// keeps its tensors) and fits them; the choices keep the native all-reduce and grouped
// point-to-point unless the other is predicted 10% faster at reduce_bytes and transfer_bytes. Every rank gets the same model (from the slowest rank's times).
CommCostModel calibrate(Communicator& comm, const std::vector<int64_t>& sizes, double reduce_bytes,
                        double transfer_bytes, int reps = 5, Device device = Device::cpu());

// Parses --comm: auto, allreduce, rs-ag, p2p, alltoallv (the last four force one choice).
void apply_comm_choice(CommCostModel& model, const std::string& choice);

// All-reduce done the chosen way: natively, or as reduce-scatter + all-gather.
void reduce_by(Communicator& comm, Tensor& t, ReduceMethod method);

}  // namespace flextp

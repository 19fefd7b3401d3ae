#include "parallel/comm/cost_model.h"

#include <algorithm>
#include <cstdio>

#include "core/ops/shape_ops.h"
#include "core/timer.h"

namespace flextp {

double slowest_median_ms(Communicator& comm, int reps, const std::function<void()>& f) {
  std::vector<double> t;
  f();  // warm-up
  for (int i = 0; i < reps; ++i) {
    comm.barrier();
    double start = now_ms();
    f();
    t.push_back(now_ms() - start);
  }
  Tensor m = Tensor::from_vector(std::vector<double>{median(t)}, {1});
  comm.all_reduce(m, ReduceOp::Max);
  return m.to_vector<double>()[0];
}

AlphaBeta fit_alpha_beta(const std::vector<std::pair<double, double>>& s) {
  // Weighted by 1 / ms^2: each sample's relative error counts alike, so the small messages fix
  // the latency and the large ones the bandwidth (plain least squares let the largest message's
  // noise set the latency: 0 or tens of ms over TCP).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : s) {
    double w = 1.0 / std::max(y * y, 1e-12);
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
  }
  AlphaBeta f;
  if (sw == 0) return f;
  double den = sw * sxx - sx * sx;
  f.ms_per_byte = den > 0 ? (sw * sxy - sx * sy) / den : 0.0;
  f.alpha_ms = (sy - f.ms_per_byte * sx) / sw;
  if (f.ms_per_byte < 0) f = {sy / sw, 0.0};                    // no growth with size: latency alone
  if (f.alpha_ms < 0) f = {0.0, sxx > 0 ? sxy / sxx : 0.0};  // through the origin
  return f;
}

const char* method_name(ReduceMethod m) { return m == ReduceMethod::AllReduce ? "allreduce" : "rs-ag"; }
const char* method_name(TransferMethod m) { return m == TransferMethod::PointToPoint ? "p2p" : "alltoallv"; }

double CommCostModel::transfer_ms(double bytes) const {
  auto it = fits.find(method_name(transfer));
  return it == fits.end() ? 0.0 : it->second.predict_ms(bytes);
}

std::string CommCostModel::table() const {
  std::string out;
  char line[160];
  for (const auto& [name, f] : fits) {
    std::snprintf(line, sizeof line, "  %-10s latency %8.4f ms  bandwidth %9.1f MB/s\n", name.c_str(), f.alpha_ms,
                  f.ms_per_byte > 0 ? 1e-3 / f.ms_per_byte : 0.0);
    out += line;
  }
  out += std::string("  chosen: reduction by ") + method_name(reduce) + ", migration by " + method_name(transfer) + "\n";
  return out;
}

void reduce_by(Communicator& comm, Tensor& t, ReduceMethod method) {
  int n = comm.size();
  if (method == ReduceMethod::AllReduce || n == 1 || t.numel() == 0) {
    comm.all_reduce(t);
    return;
  }
  // Pad to a multiple of the rank count, reduce-scatter, all-gather, copy back.
  int64_t len = t.numel(), chunk = (len + n - 1) / n;
  Tensor padded = Tensor::zeros({chunk * n}, t.dtype(), t.device());
  slice_rows(padded, 0, len).copy_from(view_as(t, {len}));
  Tensor mine = Tensor::empty({chunk}, t.dtype(), t.device());
  comm.reduce_scatter(padded, mine);
  comm.all_gather(mine, padded);
  view_as(t, {len}).copy_from(slice_rows(padded, 0, len));
}

std::vector<int64_t> calibration_sizes(double reduce_bytes, double transfer_bytes) {
  return {1 << 16, 1 << 18, 1 << 20, 1 << 22, static_cast<int64_t>(reduce_bytes), static_cast<int64_t>(transfer_bytes)};
}

CommCostModel calibrate(Communicator& comm, const std::vector<int64_t>& sizes, double reduce_bytes,
                        double transfer_bytes, int reps, Device device) {
  int n = comm.size(), r = comm.rank();
  std::map<std::string, std::vector<std::pair<double, double>>> samples;
  for (int64_t bytes : sizes) {
    int64_t floats = std::max<int64_t>(1, bytes / 4);
    Tensor t = Tensor::zeros({floats}, DType::F32, device);
    double b = static_cast<double>(floats * 4);
    samples["allreduce"].push_back({b, slowest_median_ms(comm, reps, [&] { comm.all_reduce(t); })});
    samples["rs-ag"].push_back({b, slowest_median_ms(comm, reps, [&] { reduce_by(comm, t, ReduceMethod::ReduceScatterAllGather); })});
    samples["broadcast"].push_back({b, slowest_median_ms(comm, reps, [&] { comm.broadcast(t, 0); })});
    if (n > 1) {
      // A migration-like exchange: every rank sends `bytes` to the next one.
      Tensor in = Tensor::empty({floats}, DType::F32, device);
      samples["p2p"].push_back({b, slowest_median_ms(comm, reps, [&] {
        comm.send_recv({{(r + 1) % n, t}}, {{(r + n - 1) % n, in}});
      })});
      std::vector<int64_t> sb(n, 0), rb(n, 0);
      sb[(r + 1) % n] = b;
      rb[(r + n - 1) % n] = b;
      samples["alltoallv"].push_back({b, slowest_median_ms(comm, reps, [&] { comm.all_to_all_v(t, sb, in, rb); })});
    }
  }
  // Each sample is the slowest rank's (slowest_median_ms): every rank fits the same numbers and
  // makes the same choices.
  CommCostModel m;
  for (const auto& [name, samples_of] : samples) m.fits[name] = fit_alpha_beta(samples_of);
  // The native all-reduce and grouped point-to-point unless the other is predicted 10% faster: over
  // TCP the two of each pair send the same bytes, and a fit's noise chose rs-ag at 1 Gbit/s where
  // it measured 1.6x slower (docs/results.md).
  constexpr double kClearly = 0.9;
  m.reduce = m.fits["rs-ag"].predict_ms(reduce_bytes) < kClearly * m.fits["allreduce"].predict_ms(reduce_bytes)
                 ? ReduceMethod::ReduceScatterAllGather
                 : ReduceMethod::AllReduce;
  if (n > 1)
    m.transfer =
        m.fits["alltoallv"].predict_ms(transfer_bytes) < kClearly * m.fits["p2p"].predict_ms(transfer_bytes)
            ? TransferMethod::AllToAllV
            : TransferMethod::PointToPoint;
  return m;
}

void apply_comm_choice(CommCostModel& m, const std::string& choice) {
  if (choice == "auto") return;
  if (choice == "allreduce")
    m.reduce = ReduceMethod::AllReduce;
  else if (choice == "rs-ag")
    m.reduce = ReduceMethod::ReduceScatterAllGather;
  else if (choice == "p2p")
    m.transfer = TransferMethod::PointToPoint;
  else if (choice == "alltoallv")
    m.transfer = TransferMethod::AllToAllV;
  else
    FLEXTP_FAIL("communication choice '", choice, "' is not one of auto, allreduce, rs-ag, p2p, alltoallv");
}

}  // namespace flextp

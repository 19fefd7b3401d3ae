#include "parallel/dp/window_shares.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace flextp {

std::vector<int64_t> even_shares(int64_t batch, int replicas, int64_t micro) {
  FLEXTP_CHECK(replicas > 0, "window shares for ", replicas, " replicas: there must be at least one");
  FLEXTP_CHECK(batch > 0 && batch % replicas == 0, "a batch of ", batch, " windows does not split evenly over ",
               replicas, " replicas: use a multiple of ", replicas);
  micro_steps(batch / replicas, micro);  // its error names a micro-batch that does not divide the share
  return std::vector<int64_t>(static_cast<size_t>(replicas), batch / replicas);
}

double predicted_step_ms(const std::vector<int64_t>& shares, const std::vector<double>& speed) {
  FLEXTP_CHECK(shares.size() == speed.size(), shares.size(), " window shares for ", speed.size(), " replicas' speeds");
  double slowest = 0;
  for (size_t d = 0; d < shares.size(); ++d) {
    FLEXTP_CHECK(speed[d] > 0 && std::isfinite(speed[d]), "replica ", d, "'s speed is ", speed[d],
                 " windows per ms: it must be positive");
    slowest = std::max(slowest, static_cast<double>(shares[d]) / speed[d]);
  }
  return slowest;
}

std::vector<int64_t> proportional_shares(const std::vector<double>& speed, int64_t batch, int64_t micro) {
  FLEXTP_CHECK(!speed.empty(), "window shares for no replicas");
  FLEXTP_CHECK(micro >= 0, "a micro-batch of ", micro, " windows: it must be positive (0: one window)");
  const int64_t unit = micro > 0 ? micro : 1;
  const int64_t replicas = static_cast<int64_t>(speed.size());
  FLEXTP_CHECK(batch > 0 && batch % unit == 0, "a batch of ", batch, " windows is not whole micro-steps of ", unit,
               " windows");
  FLEXTP_CHECK(batch / unit >= replicas, "a batch of ", batch, " windows in micro-steps of ", unit, " has ",
               batch / unit, " micro-steps: too few for one on each of ", replicas, " replicas");
  for (size_t d = 0; d < speed.size(); ++d)
    FLEXTP_CHECK(speed[d] > 0 && std::isfinite(speed[d]), "replica ", d, "'s speed is ", speed[d],
                 " windows per ms: it must be positive");
  // One micro-step each, then each further one to the replica that would finish it soonest:
  // the greedy choice keeps the slowest replica's time the least possible at every count.
  std::vector<int64_t> steps(speed.size(), 1);
  for (int64_t left = batch / unit - replicas; left > 0; --left) {
    size_t best = 0;
    for (size_t d = 1; d < steps.size(); ++d)
      if (static_cast<double>(steps[d] + 1) / speed[d] < static_cast<double>(steps[best] + 1) / speed[best]) best = d;
    ++steps[best];
  }
  for (int64_t& s : steps) s *= unit;
  return steps;
}

std::vector<int64_t> speed_shares(const ReplicaView& now, double min_gain) {
  FLEXTP_CHECK(min_gain >= 0 && min_gain < 1, "the window shares' minimum gain must be in [0, 1), got ", min_gain);
  FLEXTP_CHECK(now.speed.size() == now.windows.size(), now.windows.size(), " window shares for ", now.speed.size(),
               " replicas' speeds");
  if (!now.movable || now.replicas() <= 1) return now.windows;
  for (double s : now.speed)
    if (!(s > 0) || !std::isfinite(s)) return now.windows;  // not measured yet
  const int64_t batch = std::accumulate(now.windows.begin(), now.windows.end(), int64_t{0});
  std::vector<int64_t> best = proportional_shares(now.speed, batch, now.micro);
  if (predicted_step_ms(best, now.speed) < predicted_step_ms(now.windows, now.speed) * (1 - min_gain)) return best;
  return now.windows;
}

void check_shares(const std::vector<int64_t>& shares, int replicas, int64_t batch, int64_t micro, const char* who) {
  FLEXTP_CHECK(static_cast<int>(shares.size()) == replicas, who, " name ", shares.size(), " shares for ", replicas,
               " replicas");
  const int64_t unit = micro > 0 ? micro : 1;
  int64_t sum = 0;
  for (size_t d = 0; d < shares.size(); ++d) {
    FLEXTP_CHECK(shares[d] >= unit && shares[d] % unit == 0, who, " give replica ", d, " ", shares[d],
                 " windows: a share must be a positive multiple of ", unit, " (whole micro-steps)");
    sum += shares[d];
  }
  FLEXTP_CHECK(sum == batch, who, " sum to ", sum, " windows, not the batch of ", batch);
}

WindowShares::WindowShares(const Grid& grid, int64_t batch, int64_t micro, bool movable, int window)
    : grid_(grid),
      batch_(batch),
      micro_(micro),
      movable_(movable),
      shares_(even_shares(batch, grid.dp, micro)),
      speeds_(grid.dp, window) {}

ReplicaView WindowShares::view() const {
  std::vector<double> speed = speeds_.samples() > 0 ? speeds_.speeds() : std::vector<double>(shares_.size(), 0.0);
  return {shares_, speed, micro_, movable_};
}

ReplicaView WindowShares::after_step(Communicator& group, Communicator& replicas, double compute_ms, int64_t computed,
                                     const std::vector<int64_t>& decided, double least_wait_ms) {
  FLEXTP_CHECK(replicas.size() == grid_.dp && group.size() == grid_.tp, "window shares of a grid of ", grid_.str(),
               " on groups of ", group.size(), " ranks and ", replicas.size(), " replicas");
  // The replica is as slow as its slowest rank; every rank of it then reports the same time, so
  // every data-parallel group (one per tensor-parallel slot) gathers the same vector.
  Tensor slowest = Tensor::from_vector<double>({compute_ms}, {1});
  if (group.size() > 1) group.all_reduce(slowest, ReduceOp::Max);
  std::vector<RankReport> reports =
      gather_reports(replicas, {slowest.item(), least_wait_ms, static_cast<double>(computed), UnitCounts{}});
  speeds_.record(reports);
  ReplicaView done = view();
  done.least_wait_ms = least_wait_ms;
  for (const RankReport& r : reports) done.least_wait_ms = std::min(done.least_wait_ms, r.wait_ms);
  int64_t sum = 0;
  for (size_t d = 0; d < done.windows.size(); ++d) sum += done.windows[d] = static_cast<int64_t>(speeds_.table()[d].work);
  FLEXTP_CHECK(sum == batch_, "the replicas computed ", sum, " windows of a step of ", batch_);
  if (!decided.empty()) {
    check_shares(decided, grid_.dp, batch_, micro_, "the balancing policy's window shares");
    FLEXTP_CHECK(movable_ || decided == shares_,
                 "the balancing policy changed the window shares, which this run keeps even");
    shares_ = decided;
  }
  return done;
}

}  // namespace flextp

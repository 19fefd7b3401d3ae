#include "bench/grid_model.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "nn/unit_costs.h"
#include "nn/units.h"
#include "parallel/dp/window_shares.h"

namespace flextp {

double Link::ring_allreduce_ms(double bytes, int ranks) const {
  if (ranks <= 1) return 0;
  return 2.0 * (ranks - 1) * (latency_us / 1000.0 + bytes / ranks / (gbs * 1e6));
}

GridModel::GridModel(const GPTConfig& c, int64_t seq, int tp, int64_t batch, double window_ms, Link tp_link,
                     Link dp_link)
    : tp_(tp), batch_(batch), dp_link_(dp_link) {
  FLEXTP_CHECK(tp > 0, "grid model: ", tp, " ranks per tensor-parallel group");
  FLEXTP_CHECK(batch > 0, "grid model: a batch of ", batch, " windows");
  FLEXTP_CHECK(window_ms > 0, "grid model: one window's compute must take a positive time, got ", window_ms);
  window_costs_ = gpt_model_costs(c, {1, seq, 2});
  even_ = Partition::even(unit_groups(c), tp);
  work_per_ms_ = predicted_step_ms(even_, std::vector<double>(tp, 1.0), window_costs_) / (window_ms / tp);
  // Attention and MLP each end in one all-reduce of the window's activations.
  tp_comm_ms_ = 2.0 * c.n_layer * tp_link.ring_allreduce_ms(4.0 * seq * c.n_embd, tp);
  ModelCosts weights = gpt_model_costs(c, {1, seq, 0});
  double unit_bytes = 0;
  for (const auto& [group, owners] : even_.groups()) unit_bytes += owners.size() * weights.unit(group).bytes;
  slot_gradient_bytes_ = unit_bytes / tp;
}

std::vector<double> GridModel::scaled(const std::vector<double>& speed) const {
  std::vector<double> s;
  for (double x : speed) s.push_back(x * work_per_ms_);
  return s;
}

void GridModel::check(const GridSpeeds& speed) const {
  FLEXTP_CHECK(!speed.empty(), "grid model: no replicas");
  for (const auto& replica : speed) {
    FLEXTP_CHECK(static_cast<int>(replica.size()) == tp_, "grid model: a replica of ", replica.size(), " ranks in groups of ",
                 tp_);
    for (double s : replica) FLEXTP_CHECK(std::isfinite(s) && s > 0, "grid model: speeds must be positive, got ", s);
  }
}

double GridModel::replica_window_ms(const std::vector<double>& speed, bool balance) const {
  std::vector<double> s = scaled(speed);
  const Partition& p = balance ? balanced_partition(even_, s, window_costs_) : even_;
  return predicted_step_ms(p, s, window_costs_) + tp_comm_ms_;
}

double GridModel::dp_allreduce_ms(int replicas) const { return dp_link_.ring_allreduce_ms(slot_gradient_bytes_, replicas); }

double GridModel::step_ms(const GridSpeeds& speed, bool migrate, bool shares) const {
  check(speed);
  const int dp = static_cast<int>(speed.size());
  std::vector<double> per_window;
  for (const auto& replica : speed) per_window.push_back(replica_window_ms(replica, migrate));
  // Train's own rule (parallel/dp/window_shares.h), at its steady state: no hysteresis.
  std::vector<double> speed_per_ms;
  for (double t : per_window) speed_per_ms.push_back(1.0 / t);
  std::vector<int64_t> share = shares ? proportional_shares(speed_per_ms, batch_, 0) : even_shares(batch_, dp, 0);
  double slowest = 0;
  for (int d = 0; d < dp; ++d) slowest = std::max(slowest, share[d] * per_window[d]);
  return slowest + dp_allreduce_ms(dp);
}

double GridModel::ideal_ms(const GridSpeeds& speed) const {
  check(speed);
  const int dp = static_cast<int>(speed.size());
  double group_work = 0, total_speed = 0;
  for (double w : rank_work(even_, window_costs_)) group_work += w;
  for (const auto& replica : speed)
    for (double s : replica) total_speed += s * work_per_ms_;
  return batch_ * group_work / total_speed + static_cast<double>(batch_) / dp * tp_comm_ms_ + dp_allreduce_ms(dp);
}

GridStep simulate_grid_step(const GridModel& m, const GridSpeeds& speed) {
  return {m.step_ms(speed, false, false), m.step_ms(speed, true, false), m.step_ms(speed, false, true),
          m.step_ms(speed, true, true), m.ideal_ms(speed)};
}

}  // namespace flextp

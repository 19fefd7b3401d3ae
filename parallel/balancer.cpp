#include "parallel/balancer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "parallel/resize.h"

namespace flextp {

Balancer::Balancer(Communicator& comm, Partition initial, UnitCosts costs, CommCostModel comm_model,
                   BalanceOptions o)
    : comm_(comm),
      partition_(std::move(initial)),
      costs_(std::move(costs)),
      comm_model_(std::move(comm_model)),
      o_(std::move(o)),
      monitor_(comm.size(), o_.window),
      resizer_(o_.resize) {
  FLEXTP_CHECK(o_.policy == "none" || o_.policy == "migrate" || o_.policy == "resize" || o_.policy == "hybrid",
               "--balance '", o_.policy, "' is not one of none, migrate, resize, hybrid");
  FLEXTP_CHECK(o_.lambda >= 0, "--lambda must be >= 0 (inf for never dropping work), got ", o_.lambda);
}

void Balancer::observe_gradients(const std::vector<Parameter*>& params, int64_t step) {
  if (o_.policy == "resize" || o_.policy == "hybrid") resizer_.observe(params, step);
}

std::vector<double> Balancer::units_per_kind(int rank) const {
  std::vector<double> count(3, 0.0);
  for (const auto& [group, owners] : partition_.groups()) {
    size_t kind = group.size() >= 4 && group.compare(group.size() - 4, 4, "head") == 0 ? 0
                  : group.size() >= 3 && group.compare(group.size() - 3, 3, "mlp") == 0 ? 1
                                                                                         : 2;
    for (int o : owners) count[kind] += o == rank;
  }
  count.push_back(rank == comm_.rank() ? static_cast<double>(skipped_) : 0.0);
  return count;
}

double Balancer::work_of(int rank) const {
  return rank_work(partition_, costs_)[rank] - (rank == comm_.rank() ? skipped_work_ : 0.0);
}

double Balancer::resized_step_ms(const std::vector<double>& speed) const {
  double total = 0, slowest = 1e300;
  for (double x : speed) slowest = std::min(slowest, x);
  for (const auto& [group, owners] : partition_.groups()) {
    double unit = costs_.work.count(group) ? costs_.work.at(group) : 0.0, worst = 0;
    for (int r = 0; r < partition_.ranks(); ++r) {
      double n = 0;
      for (int o : owners) n += o == r;
      if (Resizer::resizable(group)) n = std::min<double>(n, resizer_.keep_count(owners, speed, r));
      worst = std::max(worst, n * unit / speed[r]);
    }
    total += worst;
  }
  return total + costs_.replicated_work / slowest;
}

void Balancer::resize(const std::vector<Parameter*>& params, const std::vector<double>& speed) {
  skipped_ = resizer_.apply(params, partition_, speed, comm_.rank());
  skipped_work_ = 0;
  for (const auto& [group, owners] : partition_.groups()) {
    std::vector<Parameter*> ps = group_parameters(params, group);
    if (ps.empty()) continue;
    double unit = costs_.work.count(group) ? costs_.work.at(group) : 0.0;
    skipped_work_ += unit * static_cast<double>(ps.front()->units.size() - active_units(ps));
  }
}

void Balancer::restore(const std::vector<Parameter*>& params) {
  for (const auto& [group, owners] : partition_.groups()) set_active_units(group_parameters(params, group), -1);
  skipped_ = 0;
  skipped_work_ = 0;
}

BalanceStep Balancer::migrate(const Plan& plan, const std::vector<Parameter*>& params,
                              const std::vector<std::string>& slots) {
  BalanceStep out;
  out.plan = plan;
  out.choice = "migrate";
  restore(params);  // every unit travels whole and computes again once balanced
  auto start = std::chrono::steady_clock::now();
  out.moved = repartition(params, partition_, plan.target, slots, &comm_, comm_model_.transfer);
  out.migrate_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  partition_ = plan.target;
  since_move_ = 0;
  after_move_ms_.assign(1, 0.0);  // settling starts with the next step
  move_transfer_ms_ = plan.transfer_ms;
  return out;
}

void Balancer::observe_settling() {
  constexpr size_t kSettle = 5;  // steps after a move; the last is taken as settled
  if (after_move_ms_.empty()) return;
  double step = 0;
  for (const RankRow& r : monitor_.table()) step = std::max(step, r.compute_ms + r.wait_ms);
  after_move_ms_.push_back(step);
  if (after_move_ms_.size() < kSettle + 1) return;
  double excess = move_transfer_ms_, settled = after_move_ms_.back();
  for (size_t k = 1; k + 1 < after_move_ms_.size(); ++k) excess += std::max(0.0, after_move_ms_[k] - settled);
  migration_cost_ms_ = migration_cost_ms_ < 0 ? excess : 0.5 * migration_cost_ms_ + 0.5 * excess;
  after_move_ms_.clear();
}

BalanceStep Balancer::hybrid(const std::vector<Parameter*>& params, const std::vector<std::string>& slots,
                             const std::vector<double>& speed) {
  BalanceStep out;
  out.plan.target = partition_;
  double keep_ms = predicted_step_ms(partition_, speed, costs_);
  out.plan.now_ms = out.plan.after_ms = keep_ms;
  out.plan.ideal_ms = ideal_step_ms(partition_, speed, costs_);
  Partition target = balanced_partition(partition_, speed, costs_);
  double balanced_ms = predicted_step_ms(target, speed, costs_);
  bool imbalanced = keep_ms > balanced_ms * (1 + o_.planner.min_gain) ||
                    resized_step_ms(speed) < keep_ms * (1 - o_.planner.min_gain);
  slow_age_ = imbalanced ? slow_age_ + 1 : 0;
  if (!imbalanced) {
    restore(params);
    return out;
  }
  double steps = static_cast<double>(std::min<int64_t>(o_.planner.horizon, std::max<int64_t>(slow_age_, 1)));
  // The share of importance resizing would skip, averaged over the ranks (all get the same).
  double mine = resizer_.skipped_importance(params, partition_, speed, comm_.rank());
  Tensor in = Tensor::from_vector<double>({mine}, {1, 1}), all = Tensor::empty({comm_.size(), 1}, DType::F64);
  comm_.all_gather(in, all);
  double accuracy = 0;
  for (double x : all.to_vector<double>()) accuracy += x / comm_.size();
  Plan mig = plan_migration(partition_, speed, costs_, comm_model_, {static_cast<int64_t>(steps), 0.0});
  HybridCosts h;
  h.keep_ms = keep_ms;
  h.resize_ms = resized_step_ms(speed);
  h.skipped_share = accuracy;
  h.migrate_ms = mig.after_ms;
  h.transfer_ms = migration_cost_ms_ >= 0 ? std::max(mig.transfer_ms, migration_cost_ms_) : mig.transfer_ms + 2 * keep_ms;
  h.can_migrate = mig.units_moved > 0 && since_move_ >= o_.settle_steps;
  h.steps = steps;
  h.lambda = o_.lambda;
  std::string choice = hybrid_choice(h);
  if (choice == "migrate") return migrate(mig, params, slots);
  if (choice == "resize") {
    resize(params, speed);
    out.choice = "resize";
    return out;
  }
  restore(params);
  return out;
}

BalanceStep Balancer::after_step(double compute_ms, double wait_ms, const std::vector<Parameter*>& params,
                                 const std::vector<std::string>& slots) {
  BalanceStep out;
  monitor_.record(comm_, compute_ms, wait_ms, work_of(comm_.rank()), units_per_kind(comm_.rank()));
  ++since_move_;
  observe_settling();
  std::vector<double> speed = monitor_.speeds();
  out.plan.target = partition_;
  out.plan.now_ms = predicted_step_ms(partition_, speed, costs_);
  out.plan.ideal_ms = ideal_step_ms(partition_, speed, costs_);
  out.plan.after_ms = out.plan.now_ms;
  if (comm_.size() == 1) return out;
  if (o_.policy == "resize" || o_.policy == "hybrid") {
    // Every rank reads the same table, so all probe in the same step.
    bool any_skipped = false;
    for (const RankRow& r : monitor_.table()) any_skipped = any_skipped || (r.units.size() > 3 && r.units[3] > 0);
    bool was_probe = probing_;
    probing_ = false;
    if (!any_skipped && !was_probe) resized_for_ = 0, episode_probes_ = 0;  // the episode is over
    if (any_skipped) ++resized_for_;
    int64_t due = std::min(o_.probe_max, o_.probe_first << std::min<int64_t>(episode_probes_, 20));
    if (o_.probe_first > 0 && any_skipped && resized_for_ >= due) {
      restore(params);
      resized_for_ = 0;
      ++episode_probes_;
      probing_ = true;
      out.choice = "probe";
      return out;
    }
  }
  if (o_.policy == "resize") {
    // Resizing reacts at once and moves nothing: every rank sets its own active units from the
    // last step's speeds, so a slowdown is absorbed from the next step on.
    resize(params, monitor_.fast_speeds());
    out.choice = skipped_ ? "resize" : "keep";
    return out;
  }
  if (o_.policy == "hybrid") return hybrid(params, slots, monitor_.fast_speeds());
  if (o_.policy != "migrate" || since_move_ < o_.settle_steps) return out;
  out.plan = plan_migration(partition_, speed, costs_, comm_model_, o_.planner);
  if (!out.plan.migrate) return out;
  return migrate(out.plan, params, slots);
}

}  // namespace flextp

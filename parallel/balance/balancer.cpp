#include "parallel/balance/balancer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "parallel/balance/active_units.h"
#include "parallel/comm/gather_rows.h"

namespace flextp {

Balancer::Balancer(Communicator& comm, std::vector<UnitGroup> units, Partition initial, UnitCosts costs,
                   CommCostModel comm_model, BalanceOptions o)
    : Balancer(comm, std::move(units), std::move(initial), std::move(costs), std::move(comm_model), o,
               make_policy(o)) {}

Balancer::Balancer(Communicator& comm, std::vector<UnitGroup> units, Partition initial, UnitCosts costs,
                   CommCostModel comm_model, BalanceOptions o, std::unique_ptr<BalancePolicy> policy)
    : comm_(comm),
      units_(std::move(units)),
      partition_(std::move(initial)),
      costs_(std::move(costs)),
      comm_model_(std::move(comm_model)),
      o_(std::move(o)),
      policy_(std::move(policy)),
      monitor_(comm.size(), o_.window),
      resizer_(o_.resize) {
  FLEXTP_CHECK(policy_ != nullptr, "the balancer needs a policy");
  FLEXTP_CHECK(o_.lambda >= 0, "the hybrid's lambda must be >= 0 (inf: never drop work), got ", o_.lambda);
  // The policies look the partition's groups up in the registry: both must name the same ones.
  FLEXTP_CHECK(units_.size() == partition_.groups().size(), "the unit registry has ", units_.size(),
               " groups but the partition ", partition_.groups().size());
  for (const UnitGroup& g : units_)
    FLEXTP_CHECK(static_cast<int64_t>(partition_.owners(g.name).size()) == g.units, "unit group '", g.name,
                 "' has ", g.units, " units but the partition assigns ", partition_.owners(g.name).size());
}

void Balancer::observe_gradients(const std::vector<Parameter*>& params, int64_t step) {
  if (policy_->uses_importance()) resizer_.observe(params, step);
}

UnitCounts Balancer::unit_counts(int rank) const {
  UnitCounts count = units_per_kind(units_, partition_, rank);
  if (rank == comm_.rank()) count.skipped = skipped_;
  return count;
}

double Balancer::work_of(int rank) const {
  return rank_work(partition_, costs_)[rank] - (rank == comm_.rank() ? skipped_work_ : 0.0);
}

double Balancer::skipped_share(const std::vector<Parameter*>& params, const std::vector<double>& speed) {
  double mine = resizer_.skipped_importance(params, partition_, speed, comm_.rank());
  Tensor in = Tensor::from_vector<double>({mine}, {1, 1}), all = Tensor::empty({comm_.size(), 1}, DType::F64);
  comm_.all_gather(in, all);
  double mean = 0;
  for (double x : all.to_vector<double>()) mean += x / comm_.size();
  return mean;
}

void Balancer::resize(const std::vector<Parameter*>& params, const std::map<std::string, int64_t>& keep) {
  skipped_ = 0;
  skipped_work_ = 0;
  for (const auto& [group, owners] : partition_.groups()) {
    std::vector<Parameter*> ps = group_parameters(params, group);
    if (ps.empty()) continue;
    auto wanted = keep.find(group);
    int64_t n = static_cast<int64_t>(ps.front()->units.size());
    resizer_.keep_most_important(ps, group, wanted == keep.end() ? n : std::min(n, wanted->second));
    int64_t skipped = n - active_units(ps);
    double unit = costs_.work.count(group) ? costs_.work.at(group) : 0.0;
    skipped_ += skipped;
    skipped_work_ += unit * static_cast<double>(skipped);
  }
}

void Balancer::restore(const std::vector<Parameter*>& params) {
  for (const auto& [group, owners] : partition_.groups()) set_active_units(group_parameters(params, group), -1);
  skipped_ = 0;
  skipped_work_ = 0;
}

void Balancer::migrate(const Plan& plan, const std::vector<Parameter*>& params, const std::vector<std::string>& slots,
                       BalanceStep& out) {
  restore(params);  // every unit travels whole and computes again once balanced
  auto start = std::chrono::steady_clock::now();
  out.moved = repartition(params, partition_, plan.target, slots, &comm_, comm_model_.transfer);
  out.migrate_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  partition_ = plan.target;
  since_move_ = 0;
  after_move_ms_.assign(1, 0.0);  // settling starts with the next step
  move_transfer_ms_ = plan.transfer_ms;
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

std::vector<double> Balancer::monitor_row(double compute_ms, double wait_ms, const BurstSample& burst,
                                         const SyncLedger& syncs) const {
  return Monitor::row(compute_ms, wait_ms, work_of(comm_.rank()), unit_counts(comm_.rank()), burst, syncs);
}

BalanceStep Balancer::after_step(double compute_ms, double wait_ms, const std::vector<Parameter*>& params,
                                 const std::vector<std::string>& slots, const BurstSample& burst,
                                 const SyncLedger& syncs) {
  return after_step(all_gather_rows(comm_, monitor_row(compute_ms, wait_ms, burst, syncs)), params, slots);
}

BalanceStep Balancer::after_step(const std::vector<std::vector<double>>& rows, const std::vector<Parameter*>& params,
                                 const std::vector<std::string>& slots) {
  monitor_.ingest(rows);
  ++since_move_;
  observe_settling();
  Observation seen{monitor_.samples(), comm_.rank(), monitor_.table(), monitor_.speeds(), monitor_.fast_speeds(),
                   partition_, units_, costs_, comm_model_, resizer_, since_move_, migration_cost_ms_,
                   [&](const std::vector<double>& speed) { return skipped_share(params, speed); }, replicas_};
  // One rank has no one to balance with (but its replica may have other replicas to share with).
  Decision d = comm_.size() == 1 ? keep_at(seen, seen.speeds) : policy_->decide(seen);
  if (d.shares.empty() && seen.replicas.replicas() > 1) d.shares = policy_->window_shares(seen);
  BalanceStep out;
  out.shares = d.shares;
  out.plan = d.plan;
  out.action = d.action;
  out.choice = action_name(d.action);
  const bool was_resized = skipped_ > 0;
  switch (d.action) {
    case Action::resize: resize(params, d.keep); break;
    case Action::migrate: migrate(d.plan, params, slots, out); break;
    case Action::keep:
    case Action::probe:
      if (skipped_) restore(params);
      break;
  }
  out.work_changed = d.action == Action::resize || d.action == Action::migrate || was_resized;
  return out;
}

}  // namespace flextp

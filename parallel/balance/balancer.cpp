#include "parallel/balance/balancer.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/timer.h"
#include "parallel/balance/active_units.h"
#include "parallel/tp/repartition.h"

namespace flextp {

Balancer::Balancer(Communicator& comm, ModelCosts model, Partition initial, CommCostModel comm_model,
                   BalanceOptions o)
    : Balancer(comm, std::move(model), std::move(initial), std::move(comm_model), o, make_policy(o)) {}

Balancer::Balancer(Communicator& comm, ModelCosts model, Partition initial, CommCostModel comm_model,
                   BalanceOptions o, std::unique_ptr<BalancePolicy> policy)
    : comm_(comm),
      model_(std::move(model)),
      partition_(std::move(initial)),
      comm_model_(std::move(comm_model)),
      o_(std::move(o)),
      policy_(std::move(policy)),
      monitor_(comm.size(), o_.window),
      resizer_(o_.resize),
      trials_(o_.trials),
      correction_(comm.size(), 1.0) {
  FLEXTP_CHECK(policy_ != nullptr, "the balancer needs a policy");
  FLEXTP_CHECK(o_.lambda >= 0, "the hybrid's lambda must be >= 0 (inf: never drop work), got ", o_.lambda);
  // The policies look the partition's groups up in the registry: both must name the same ones.
  FLEXTP_CHECK(model_.groups.size() == partition_.groups().size(), "the unit registry has ", model_.groups.size(),
               " groups but the partition ", partition_.groups().size());
  for (const UnitGroup& g : model_.groups)
    FLEXTP_CHECK(static_cast<int64_t>(partition_.owners(g.name).size()) == g.units, "unit group '", g.name,
                 "' has ", g.units, " units but the partition assigns ", partition_.owners(g.name).size());
}

void Balancer::observe_gradients(const std::vector<Parameter*>& params, int64_t step) {
  if (policy_->uses_importance()) resizer_.observe(params, step);
}

UnitCounts Balancer::unit_counts(int rank) const {
  UnitCounts count = units_per_kind(model_.groups, partition_, rank);
  if (rank == comm_.rank()) count.skipped = skipped_;
  return count;
}

double Balancer::work_of(int rank) const {
  return rank_work(partition_, model_)[rank] - (rank == comm_.rank() ? skipped_work_ : 0.0);
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
  for (const auto& [group, skipped] : resizer_.resize(params, keep)) {
    skipped_ += skipped;
    skipped_work_ += model_.unit(group).work * static_cast<double>(skipped);
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
  // From a barrier, so that the time is the migration's, not this rank's wait for a slower one to
  // finish its step (which the planner does not price and the step's time already holds).
  comm_.barrier();
  const double start = now_ms();
  out.moved_bytes = repartition(params, partition_, plan.target, slots, &comm_, comm_model_.transfer);
  out.migrate_ms = now_ms() - start;
  partition_ = plan.target;
  since_move_ = 0;
  after_move_ms_.assign(1, 0.0);  // settling starts with the next step
  move_transfer_ms_ = plan.transfer_ms;
}

void Balancer::observe_settling() {
  constexpr size_t kSettle = 5;  // steps after a move; the last is taken as settled
  if (after_move_ms_.empty()) return;
  after_move_ms_.push_back(step_ms_of(monitor_.table()));
  if (after_move_ms_.size() < kSettle + 1) return;
  double excess = move_transfer_ms_, settled = after_move_ms_.back();
  for (size_t k = 1; k + 1 < after_move_ms_.size(); ++k) excess += std::max(0.0, after_move_ms_[k] - settled);
  migration_cost_ms_ = migration_cost_ms_ < 0 ? excess : 0.5 * migration_cost_ms_ + 0.5 * excess;
  after_move_ms_.clear();
}

RankReport Balancer::report(double compute_ms, double wait_ms) const {
  return {compute_ms, wait_ms, work_of(comm_.rank()), unit_counts(comm_.rank())};
}

Observation Balancer::observe(int64_t step, const std::vector<Parameter*>& params) {
  Observation seen(monitor_.table(), partition_, model_, comm_model_, resizer_);
  seen.step = step;
  seen.rank = comm_.rank();
  seen.speeds = corrected_speeds(monitor_.speeds(), correction_);
  seen.fast_speeds = corrected_speeds(monitor_.fast_speeds(), correction_);
  seen.since_move = since_move_;
  seen.migration_cost_ms = migration_cost_ms_;
  seen.skipped_share = [this, &params](const std::vector<double>& speed) { return skipped_share(params, speed); };
  seen.replicas = replicas_;
  return seen;
}

BalanceStep Balancer::after_step(int64_t step, const std::vector<RankReport>& reports,
                                 const std::vector<Parameter*>& params, const std::vector<std::string>& slots) {
  monitor_.record(reports);
  ++since_move_;
  observe_settling();
  // One rank has no one to balance with (but its replica may have other replicas to share with).
  const bool judged = o_.trials.enabled && policy_->closed_loop() && comm_.size() > 1;
  bool every_unit = true;
  for (const RankRow& r : monitor_.table()) every_unit = every_unit && r.units.skipped == 0;
  if (judged) noise_.observe(monitor_.table()), trials_.set_noise(noise_.noise());
  const TrialEvent verdict =
      judged ? trials_.observe(step_ms_of(monitor_.table()), monitor_.speeds(), every_unit) : TrialEvent::none;
  const Observation seen = observe(step, params);
  Decision d = comm_.size() == 1 ? keep_at(seen, seen.speeds) : policy_->decide(seen);
  if (d.shares.empty() && seen.replicas.replicas() > 1) d.shares = policy_->window_shares(seen);
  BalanceStep out;
  out.shares = d.shares;
  out.correction = correction_;
  out.link.comm_ms = least_wait_ms(monitor_.table());  // the transfers' own time in the group
  if (comm_.size() > 1) out.ranks = monitor_.table();
  if (o_.replicas == 1 && comm_.size() > 1) watch_links(out.link);
  if (verdict != TrialEvent::none) {
    judge(verdict, params, slots, out);
    if (verdict == TrialEvent::undone) return out;  // the undo is this step's change
  }
  if (judged) admit_to_trial(d, seen, out);
  out.plan = d.plan;
  out.action = d.action;
  out.choice = action_name(d.action);
  switch (d.action) {
    case Action::resize: resize(params, d.keep); break;
    case Action::migrate: migrate(d.plan, params, slots, out); break;
    case Action::keep:
    case Action::probe:
      if (skipped_) restore(params);
      break;
  }
  last_action_ = d.action;
  return out;
}

void Balancer::observe_replicas(ReplicaView replicas, double least_wait_ms, BalanceStep& step) {
  observe_replicas(std::move(replicas));
  step.link.comm_ms = least_wait_ms;  // a slower replica makes the others wait in the gradient sum
  watch_links(step.link);
}

void Balancer::watch_links(BalanceStep::Link& link) {
  link.event = link_watch_.record(link.comm_ms, step_ms_of(monitor_.table()));
  link.slow = link_watch_.slow(), link.usual_ms = link_watch_.usual_ms();
}

void Balancer::judge(TrialEvent verdict, const std::vector<Parameter*>& params, const std::vector<std::string>& slots,
                     BalanceStep& out) {
  out.trial = verdict == TrialEvent::kept ? "kept" : "undone";
  out.trial_why = trials_.why();
  out.trial_before_ms = trials_.before_ms();
  out.trial_after_ms = trials_.after_ms();
  out.predicted_gain = trials_.predicted_gain();
  const bool move = trials_.change() == Change::move;
  if (move && out.trial_before_ms > 0)
    out.correction = correction_ = learn_correction(trial_from_, trial_to_, monitor_.speeds(), model_, correction_,
                                                    out.trial_before_ms - out.trial_after_ms);
  if (verdict == TrialEvent::kept) return;
  if (move) {
    Plan back;
    back.migrate = back.undo = true;
    back.target = trial_from_;
    count_moves(partition_, model_, comm_model_, back);
    migrate(back, params, slots, out);
    out.plan = back;
    out.action = Action::migrate;
    out.choice = "undo";
  } else {
    restore(params);  // nothing moves back: every unit runs again
    out.action = Action::keep;
    out.choice = "keep";
  }
  last_action_ = out.action;
}

void Balancer::admit_to_trial(Decision& d, const Observation& seen, BalanceStep& out) {
  const bool resizing = last_action_ == Action::resize || last_action_ == Action::probe;
  if (resizing && d.action == Action::keep && trials_.under_way() && trials_.change() == Change::resize) {
    if (trials_.cancel()) out.trial = "inconclusive", out.trial_why = trials_.why();  // ended before its verdict
    return;
  }
  const bool moves = d.action == Action::migrate, starts_resizing = d.action == Action::resize && !resizing;
  if (!moves && !starts_resizing) {
    if (d.action != Action::keep || resizing || !policy_->explores() || !trials_.may_move() || !trials_.steady() ||
        trials_.recent_steps() < trials_.options().baseline || since_move_ < o_.settle_steps)
      return;
    // The policy sees no move worth making, yet under steady speeds the steps stay far above the
    // model's ideal: the model may be wrong. Try its best move, judged like any other.
    const TrialOptions& t = trials_.options();
    if (trials_.recent_ms() <= ideal_step_ms(partition_, seen.speeds, model_) * (1 + t.try_gap)) return;
    Plan best = plan_migration(partition_, seen.speeds, model_, comm_model_, {o_.planner.horizon, t.try_gain});
    if (!best.migrate || trials_.known_worse(best.target.str())) return;
    d = migrate_by(best);
    out.explored = true;
  } else if (!trials_.may_start() || (moves && (!trials_.may_move() || trials_.known_worse(d.plan.target.str())))) {
    d = keep_at(seen, seen.speeds);  // one change at a time, none while backing off, none back to a worse one
    return;
  }
  out.trial = "try";
  // A resize's plan predicts the resized step (resize_to), a move's the moved one.
  out.predicted_gain = d.plan.now_ms > 0 ? 1 - d.plan.after_ms / d.plan.now_ms : 0.0;
  if (d.action == Action::migrate) {
    trial_from_ = partition_;
    trial_to_ = d.plan.target;
    trials_.start(Change::move, out.predicted_gain, partition_.str(), d.plan.target.str());
  } else {
    trials_.start(Change::resize, out.predicted_gain, partition_.str(), partition_.str() + " resized");
  }
}

}  // namespace flextp

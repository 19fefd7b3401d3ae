#pragma once
// The balancing loop of a tensor-parallel run, between two steps: the balancer measures (the
// monitor's table, what a migration really costs, the importance of units) and carries out what
// its policy decides: keep, resize (skip the least important units of this rank; lossy,
// reversible, nothing moves), migrate (move units to a target partition; lossless) or probe (run
// every unit for a step). Every rank calls it with its own timings; all see the same table, so
// all decide alike. The policies and how to write one: parallel/balance/policy.h,
// parallel/balance/policies/. What the units are (their kinds, which ones resizing may skip) the
// balancer and its policies read from the model's unit registry, given as its groups.
#include <memory>
#include <string>
#include <vector>

#include "core/parameter.h"
#include "parallel/balance/balance_options.h"
#include "parallel/balance/link_watch.h"
#include "parallel/balance/monitor.h"
#include "parallel/balance/noise_gate.h"
#include "parallel/balance/planner.h"
#include "parallel/balance/policy.h"
#include "parallel/balance/resizer.h"

namespace flextp {

struct BalanceStep {
  Plan plan;
  Action action = Action::keep;
  std::string choice = "keep";  // action_name(action), for logs
  int64_t moved_bytes = 0;  // by all ranks together, in this step's moves
  double migrate_ms = 0;
  std::vector<int64_t> shares;  // the windows of each replica from the next step on (empty: one replica)
  // The closed loop (trials.h): "try" when a change starts its trial with this step's decision,
  // "kept" or "undone" when this step's measurement judged one (an undone move moves back now),
  // "inconclusive" when a resize ended before its measurement; empty otherwise. Every try ends
  // in one of the three, `trial_why` saying why. `explored`: the try is the model's best move,
  // which no policy asked for.
  std::string trial, trial_why;
  bool explored = false;
  double trial_before_ms = 0, trial_after_ms = 0, predicted_gain = 0;
  std::vector<double> correction;  // the learned per-rank correction after this step (trials.h)
  std::vector<RankRow> ranks;      // with several ranks: the monitor's table after this step
  // With several ranks or replicas: the step's communication time (the least wait of the group's
  // ranks, or of every replica's), its usual level, and whether the links slowed or recovered in
  // this step (link_watch.h).
  struct Link {
    double comm_ms = 0, usual_ms = 0;
    bool slow = false;
    LinkWatch::Event event = LinkWatch::Event::None;
  } link;
};

class Balancer {
 public:
  // `model`: the unit registry's groups (nn/units.h), the ones `initial` assigns, priced for the
  // step (nn/unit_costs.h gpt_model_costs). Makes the policy o.policy names in the policy registry
  // (policies/registry.cpp). train/balancer_setup.cpp builds it on the step clock's untimed
  // communicator, so a migration's transfers are not counted as the step's waits.
  Balancer(Communicator& comm, ModelCosts model, Partition initial, CommCostModel comm_model, BalanceOptions o);
  // With a policy of one's own, registered or not.
  Balancer(Communicator& comm, ModelCosts model, Partition initial, CommCostModel comm_model, BalanceOptions o,
           std::unique_ptr<BalancePolicy> policy);
  // This rank's report of the step it just ran: its times, and its work and units now.
  RankReport report(double compute_ms, double wait_ms) const;
  // Every rank's report of the step (in rank order, all-gathered: the trainer sends them with
  // the gradient norm's squares in one collective): measure, judge the change under trial, and
  // carry out what the policy decides. `step`: the training step just run, counted from 1.
  BalanceStep after_step(int64_t step, const std::vector<RankReport>& reports, const std::vector<Parameter*>& params,
                         const std::vector<std::string>& slots);
  // With data parallelism: the replicas as measured after a step, for the next decision (the
  // trainer's WindowShares gathers them after after_step).
  void observe_replicas(ReplicaView replicas) { replicas_ = std::move(replicas); }
  // The same, with the least wait of any rank of any replica in the step, which `step`'s links
  // are judged by (BalanceOptions::replicas > 1: after_step leaves them to this).
  void observe_replicas(ReplicaView replicas, double least_wait_ms, BalanceStep& step);
  // With resizing: after backward, before the optimizer (importance needs the gradients).
  void observe_gradients(const std::vector<Parameter*>& params, int64_t step);
  const Partition& partition() const { return partition_; }
  const Monitor& monitor() const { return monitor_; }
  // Units a rank holds per kind, and how many of them it skips now (known of this rank only).
  UnitCounts unit_counts(int rank) const;
  double work_of(int rank) const;
  // The closed loop's state: the change on trial, its verdicts, the backoff (trials.h).
  const Trials& trials() const { return trials_; }

 private:
  Communicator& comm_;
  ModelCosts model_;
  Partition partition_;
  CommCostModel comm_model_;
  BalanceOptions o_;
  std::unique_ptr<BalancePolicy> policy_;
  Monitor monitor_;
  Resizer resizer_;
  int64_t since_move_ = 0;
  // What a migration really costs beyond its bytes: the steps after it run slower while the
  // monitor learns the new partition. Measured from the table (so all ranks agree) as the excess
  // of the steps after a move over the step that follows them; unknown (-1) until the first move.
  double migration_cost_ms_ = -1;
  std::vector<double> after_move_ms_;  // step times since the last move, while settling
  double move_transfer_ms_ = 0;
  int64_t skipped_ = 0;       // units this rank skips now
  double skipped_work_ = 0;   // and their work
  ReplicaView replicas_;      // empty with one replica
  Trials trials_;
  Partition trial_from_, trial_to_;  // the move under trial: where it came from, where it went
  // What the closed loop has learned of the model's error: each rank's measured speed is divided
  // by its factor before a policy sees it (1: the model was right).
  std::vector<double> correction_;
  Action last_action_ = Action::keep;
  LinkWatch link_watch_;
  NoiseGate noise_;  // the ranks' noise, which a resize's measured gain must clear (trials.h)

  // Records this step's communication time `link.comm_ms` in the link watch; fills in the rest.
  void watch_links(BalanceStep::Link& link);
  // What the policy sees after this step (policy.h).
  Observation observe(int64_t step, const std::vector<Parameter*>& params);
  void judge(TrialEvent verdict, const std::vector<Parameter*>& params, const std::vector<std::string>& slots,
             BalanceStep& out);
  // The closed loop's gate on the policy's decision `d` (trials.h), which it may rewrite: a move or
  // a start of resizing becomes a trial ("try") when the loop allows one, a keep otherwise (one
  // change at a time, none while backing off, none back to a partition found worse); under steady
  // but slow steps an exploring policy's keep may become the model's best move; resizing the
  // policy ends before its verdict cancels its trial. A later step's verdict may undo it (judge).
  void admit_to_trial(Decision& d, const Observation& seen, BalanceStep& out);

  void observe_settling();
  double skipped_share(const std::vector<Parameter*>& params, const std::vector<double>& speed);
  void resize(const std::vector<Parameter*>& params, const std::map<std::string, int64_t>& keep);
  void restore(const std::vector<Parameter*>& params);
  void migrate(const Plan& plan, const std::vector<Parameter*>& params, const std::vector<std::string>& slots,
               BalanceStep& out);
};

}  // namespace flextp

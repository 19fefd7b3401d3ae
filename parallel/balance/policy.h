#pragma once
// A balancing policy: after every step it sees what the balancer measured (an Observation) and
// says what to do (a Decision); the balancer carries it out. A policy keeps its own history as
// members (one object lives for the whole run, on every rank). Every rank sees the same table
// and speeds, so a policy that decides from them alone makes every rank decide alike; the
// only per-rank parts are `rank` and what resizing keeps here.
// With data parallelism (--tp smaller than the world) each replica's balancer balances its own
// tensor-parallel group, and the same decision also says how many windows of a step each
// replica computes (Decision::shares, from Observation::replicas); resizing stays per rank.
// Policies live in parallel/balance/policies/, one file each, and are listed in registered.h.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "parallel/balance/balance_options.h"
#include "parallel/balance/monitor.h"
#include "parallel/balance/planner.h"
#include "parallel/balance/resizer.h"
#include "parallel/comm/cost_model.h"
#include "parallel/dp/window_shares.h"

namespace flextp {

// Built by name: the constructor takes what the observation refers to (each of its own type, so
// none can stand in another's place), the other fields are assigned one by one (Balancer::observe).
struct Observation {
  Observation(const std::vector<RankRow>& table, const Partition& partition, const ModelCosts& model,
              const CommCostModel& comm, const Resizer& resizer)
      : table(table), partition(partition), model(model), comm(comm), resizer(resizer) {}

  int64_t step = 0;  // the training step just run, counted from 1 (a resumed run counts on)
  int rank = 0;      // this process; ranks = speeds.size()
  const std::vector<RankRow>& table;  // every rank's last row (times, work, units per kind)
  // Smoothed work per ms of every rank, as measured and corrected by what the closed loop learned
  // of the model's error (trials.h: learn_correction).
  std::vector<double> speeds;
  std::vector<double> fast_speeds;    // the last sample where it jumped (for decisions cheap to undo)
  const Partition& partition;         // who holds which unit now
  // The unit registry's groups (each one's kind, layer, size, resizability, what a unit costs)
  // and the replicated work.
  const ModelCosts& model;
  const CommCostModel& comm;          // what moving bytes costs
  const Resizer& resizer;             // the running importance of this rank's units, and how many resizing keeps
  int64_t since_move = 0;             // steps since the last migration (or since the start)
  double migration_cost_ms = -1;      // measured cost of a migration beyond its bytes; < 0: none yet
  // The share of importance resizing at these speeds would skip, averaged over the ranks. A
  // collective: call it on every rank or on none (decide from what all ranks see alike).
  std::function<double(const std::vector<double>& speed)> skipped_share;
  // The data-parallel replicas (parallel/dp/window_shares.h): each one's windows of a step now and
  // its smoothed speed in windows per ms, measured up to the step before this one (0: not yet);
  // the same on every rank of every replica. Empty with one replica.
  ReplicaView replicas;

  int ranks() const { return static_cast<int>(speeds.size()); }
};

enum class Action { keep, resize, migrate, probe };
const char* action_name(Action a);  // "keep", "resize", "migrate", "probe"

struct Decision {
  Action action = Action::keep;
  // The predicted step times for the log; for migrate also the target partition and the moves.
  Plan plan;
  // resize: units of each resizable group this rank keeps (the least important others are
  // skipped); a group not listed keeps all its units.
  std::map<std::string, int64_t> keep;
  // Data parallelism: the windows of a step each replica computes from the next step on (whole
  // micro-steps, at least one each, summing to the batch; the loss stays the same mean). Empty:
  // the balancer asks the policy's window_shares(). Every replica must decide the same shares.
  std::vector<int64_t> shares;
};

class BalancePolicy {
 public:
  virtual ~BalancePolicy() = default;
  virtual Decision decide(const Observation& o) = 0;
  // Whether the balancer must score the importance of units from the gradients (for resizing).
  virtual bool uses_importance() const { return false; }
  // The window shares when decide() leaves Decision::shares empty (also asked, without decide(),
  // when a replica is a single rank: nothing moves inside it). The built-in rule: in proportion
  // to the replicas' speeds, changed only when that clearly shortens the step (speed_shares).
  // Decide from o.replicas alone, so that every replica decides alike.
  virtual std::vector<int64_t> window_shares(const Observation& o) { return speed_shares(o.replicas); }
  // The closed loop (parallel/balance/trials.h): the balancer judges every move and resize this
  // policy decides by the steps after it, and undoes what did not pay. A policy that judges its
  // own moves may opt out.
  virtual bool closed_loop() const { return true; }
  // Whether the balancer may also try the model's best move when this policy asks for none but
  // the measured step stays far above the model's ideal (kept only if it pays).
  virtual bool explores() const { return false; }
};

// Helpers for policies.
// Keep: the plan of the current partition at these speeds.
Decision keep_at(const Observation& o, const std::vector<double>& speed);
// Resize to these speeds: every resizable group of this rank keeps what it can finish in the
// time of the fastest rank (the resizer's dead band applies); the plan is keep_at's, its
// after_ms the resized step's (resized_step_ms): the gain the closed loop holds the resize to.
Decision resize_to(const Observation& o, const std::vector<double>& speed);
// Predicted step time when every rank keeps the units resizing would keep at these speeds.
double resized_step_ms(const Observation& o, const std::vector<double>& speed);
// Units a resize decision skips on this rank.
int64_t skipped_here(const Observation& o, const Decision& d);
// Probe: run every unit for a step (the plan is keep_at's on the smoothed speeds).
Decision probe(const Observation& o);
// Migrate to `plan.target`.
Decision migrate_by(Plan plan);

// The registry: --balance NAME makes the policy registered under NAME (parallel/balance/policies/registered.h).
std::unique_ptr<BalancePolicy> make_policy(const BalanceOptions& o);
std::vector<std::string> policy_names();

}  // namespace flextp

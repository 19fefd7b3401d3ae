#pragma once
// The balancing loop of a tensor-parallel run, between two steps: record the monitor, ask the
// planner, migrate when it says so. Every rank calls it with its own timings and gets the same
// plan. Policies: none (measure only), migrate (lossless), resize (skip the least important
// units of slow ranks; lossy, reversible, nothing moves) and hybrid: over the expected rest of a
// slowdown (as long again as it has lasted so far, at most the horizon) it compares
//   keep:    step x steps
//   resize:  step x steps + lambda x (share of importance skipped) x steps
//   migrate: step x steps + transfer
// and takes the cheapest, so a short slowdown is absorbed by resizing and a lasting one is
// migrated away (the resized units return once the migration has balanced the ranks).
// lambda = infinity never drops work; lambda = 0 never moves weights.
#include <string>
#include <vector>

#include "core/parameter.h"
#include "parallel/monitor.h"
#include "parallel/planner.h"
#include "parallel/repartition.h"
#include "parallel/resizer.h"

namespace flextp {

struct BalanceOptions {
  std::string policy = "none";  // none | migrate | resize | hybrid
  double lambda = 100;          // hybrid: ms of step time one step of fully skipped model is worth
  ResizeOptions resize;
  PlannerOptions planner;
  int window = 4;             // monitor EMA span, steps
  int64_t settle_steps = 1;   // monitor samples needed before the first plan and after a move
  // While units are skipped, a rank's speed is measured on the work it kept, through the cost
  // model; should the model overrate what skipping saves, a rank would look slow because it
  // skips. So all units run for one step (a probe) after probe_first resized steps, then after
  // twice as many each time the probe confirms the slowdown, up to probe_max: a one-step spike
  // costs two resized steps, a lasting slowdown a probe now and then.
  int64_t probe_first = 2, probe_max = 32;
};

struct BalanceStep {
  Plan plan;
  std::string choice = "keep";  // keep | migrate | resize | probe (hybrid's pick, or the policy's action)
  RepartitionStats moved;
  double migrate_ms = 0;
};

class Balancer {
 public:
  Balancer(Communicator& comm, Partition initial, UnitCosts costs, CommCostModel comm_model, BalanceOptions o);
  BalanceStep after_step(double compute_ms, double wait_ms, const std::vector<Parameter*>& params,
                         const std::vector<std::string>& slots);
  // With resizing: after backward, before the optimizer (importance needs the gradients).
  void observe_gradients(const std::vector<Parameter*>& params, int64_t step);
  const Partition& partition() const { return partition_; }
  const Monitor& monitor() const { return monitor_; }
  const CommCostModel& comm_model() const { return comm_model_; }
  // Predicted step time when every rank keeps the units resizing would keep at these speeds.
  double resized_step_ms(const std::vector<double>& speed) const;
  void resize(const std::vector<Parameter*>& params, const std::vector<double>& speed);
  void restore(const std::vector<Parameter*>& params);
  BalanceStep migrate(const Plan& plan, const std::vector<Parameter*>& params, const std::vector<std::string>& slots);
  BalanceStep hybrid(const std::vector<Parameter*>& params, const std::vector<std::string>& slots,
                     const std::vector<double>& speed);
  // Units a rank holds per kind (head, mlp, vocab), then how many of them it skips now.
  std::vector<double> units_per_kind(int rank) const;
  double work_of(int rank) const;

 private:
  Communicator& comm_;
  Partition partition_;
  UnitCosts costs_;
  CommCostModel comm_model_;
  BalanceOptions o_;
  Monitor monitor_;
  Resizer resizer_;
  int64_t since_move_ = 0;
  int64_t slow_age_ = 0;      // steps the ranks have been out of balance
  // What a migration really costs beyond its bytes: the steps after it run slower while the
  // monitor learns the new partition. Measured from the table (so all ranks agree) as the excess
  // of the steps after a move over the step that follows them; unknown until the first move,
  // when two steps' time is assumed.
  double migration_cost_ms_ = -1;
  std::vector<double> after_move_ms_;  // step times since the last move, while settling
  double move_transfer_ms_ = 0;
  void observe_settling();
  int64_t resized_for_ = 0;     // resized steps since the last probe (or the episode's start)
  int64_t episode_probes_ = 0;  // probes since resizing began
  bool probing_ = false;        // the step being measured ran every unit as a probe
  int64_t skipped_ = 0;       // units this rank skips now
  double skipped_work_ = 0;   // and their work
};

}  // namespace flextp

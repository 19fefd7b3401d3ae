#pragma once
// The balancing loop of a tensor-parallel run, between two steps: record the monitor, ask the
// planner, migrate when it says so. Every rank calls it with its own timings and gets the same
// plan. Policies: none (measure only), migrate (lossless) and resize (skip the least important
// units of slow ranks; lossy, reversible, nothing moves); the hybrid comes later.
#include <string>
#include <vector>

#include "core/parameter.h"
#include "parallel/monitor.h"
#include "parallel/planner.h"
#include "parallel/repartition.h"
#include "parallel/resizer.h"

namespace flextp {

struct BalanceOptions {
  std::string policy = "none";  // none | migrate | resize
  ResizeOptions resize;
  PlannerOptions planner;
  int window = 4;             // monitor EMA span, steps
  int64_t settle_steps = 1;   // monitor samples needed before the first plan and after a move
};

struct BalanceStep {
  Plan plan;
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
  int64_t skipped_ = 0;       // units this rank skips now
  double skipped_work_ = 0;   // and their work
};

}  // namespace flextp

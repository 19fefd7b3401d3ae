#pragma once
// The settings of the balancer and its policies, and their defaults: the one place they are set
// (train's flags start from these).
#include <cstdint>
#include <string>

#include "parallel/balance/planner.h"
#include "parallel/balance/resizer.h"
#include "parallel/balance/trials.h"

namespace flextp {

struct BalanceOptions {
  std::string policy = "none";  // a name in the policy registry (parallel/balance/policies/registered.h)
  // hybrid: ms of step time one step of fully skipped model is worth; 100: best at equal wall
  // time in bench/tradeoff
  double lambda = 100;
  ResizeOptions resize;
  PlannerOptions planner;
  int window = 3;             // monitor EMA span, steps
  int64_t settle_steps = 1;   // monitor samples needed before the first plan and after a move
  // While units are skipped, a rank's speed is measured on the work it kept, through the cost
  // model; should the model overrate what skipping saves, a rank would look slow because it
  // skips. So all units run for one step (a probe) after probe_first resized steps, then after
  // twice as many each time the probe confirms the slowdown, up to probe_max: a one-step spike
  // costs two resized steps, a lasting slowdown a probe now and then.
  int64_t probe_first = 2, probe_max = 32;
  // The closed loop around every move and resize (parallel/balance/trials.h).
  TrialOptions trials;
  // Not a flag: the run's data-parallel replicas (train/balancer_setup.cpp). With several, the
  // links are judged over all of them (Balancer::observe_replicas), not over this group alone.
  int replicas = 1;
};

}  // namespace flextp

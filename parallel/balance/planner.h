#pragma once
// The migration planner: a pure function of (speeds, partition, unit costs, cost model) that
// every rank evaluates on the same all-gathered inputs, so that all get the same plan with no
// coordinator.
//  - Target: in every unit group, whole units in proportion to speed, so that the group's slowest
//    rank is as fast as it can be (the ranks meet at a collective after each group's work).
//  - Moves: only the surplus units of over-loaded ranks move, each straight to a rank that
//    lacks units of that group (never through a third rank): the fewest possible.
//  - Hysteresis: migrate only when the predicted saving over the horizon exceeds the predicted
//    transfer time and the step gets at least min_gain faster.
//  - The model: a step takes, per unit group, as long as the group's slowest rank, plus the
//    replicated work at the slowest rank's speed. It knows nothing of time slices, shared GPUs or
//    throttling; where it is wrong, the closed loop (trials.h) measures the move and undoes it.
#include <functional>
#include <string>
#include <vector>

#include "parallel/comm/cost_model.h"
#include "parallel/tp/partition.h"

namespace flextp {

// The model as the planner prices it: the unit registry's groups (nn/units.h), each with what one
// of its units costs (work in arbitrary units, e.g. FLOPs; bytes of weights and optimizer state),
// and the replicated work every rank does whatever it holds.
struct ModelCosts {
  std::vector<UnitGroup> groups;
  double replicated_work = 0;
  // The group a partition key names.
  const UnitGroup& group(const std::string& name) const;
  // What one unit of the group a partition key names costs; nothing for a group it does not have.
  UnitCost unit(const std::string& group) const;
};

// Work per rank under a partition (replicated work included).
std::vector<double> rank_work(const Partition& p, const ModelCosts& c);
// How many units of a group rank r runs when it holds `held` of them (fewer when resizing skips some).
using UnitsRun = std::function<double(const std::string& group, const std::vector<int>& owners, int r, double held)>;
// The step's compute time: per group its slowest rank, plus the replicated work at the slowest
// speed; every rank runs all the units it holds unless `run` says otherwise.
double predicted_step_ms(const Partition& p, const std::vector<double>& speed, const ModelCosts& c,
                         const UnitsRun& run = {});
// The lower bound: all work spread perfectly over the total speed.
double ideal_step_ms(const Partition& p, const std::vector<double>& speed, const ModelCosts& c);

// The balanced target for these speeds, reached from `current` with the fewest moves.
Partition balanced_partition(const Partition& current, const std::vector<double>& speed, const ModelCosts& c);
struct PlannerOptions {
  int64_t horizon = 50;    // steps over which a migration must pay for itself
  double min_gain = 0.1;   // and make the step at least this much faster (noise guard)
};

struct Plan {
  bool migrate = false;
  bool undo = false;  // the move back of a move whose trial failed (trials.h): no step times predicted
  Partition target;
  int64_t units_moved = 0;
  std::vector<int64_t> units_to;  // per rank, the units it receives
  double bytes = 0;
  double now_ms = 0, after_ms = 0, transfer_ms = 0, ideal_ms = 0;
  // "migrate: 4 units, 386 KiB; step 20.1 -> 15.2 ms (ideal 14.8), transfer 53.5 ms", or for an undo
  // "undo: 4 units, 386 KiB, back to rank 0, where they were before the try ...; transfer 53.5 ms".
  std::string str() const;
};

// The units (per receiving rank), bytes and transfer time of the move from `current` to
// plan.target, into the plan.
void count_moves(const Partition& current, const ModelCosts& c, const CommCostModel& comm, Plan& plan);

Plan plan_migration(const Partition& current, const std::vector<double>& speed, const ModelCosts& c,
                    const CommCostModel& comm, const PlannerOptions& o);

}  // namespace flextp

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
//  - Bursts (optional): a rank that runs in time slices keeps the others waiting at the
//    collectives where it runs late (its burst, BurstMeter: ms per step over its own mean pace).
//    How its lateness is spread is its burst's shape (BurstMeter: its segments' times over their
//    means, relative to its step's mean pace, as equally likely values of mean 1). Every sync
//    point ends when the slowest rank arrives, and each rank's segment there takes its share of
//    its mean time T_r scaled by a draw x_r from its shape, independently of the others' draws:
//    the step is E[max_r T_r x_r] (T: the ranks' mean times on their units; the replicated
//    work is every rank's at the slowest speed in this model, so it shifts no rank against
//    another), and the waits bursts add are that less max_r T_r. Steady ranks (shape all 1) add
//    nothing; a rank slow in half of every step and as fast as the others in the rest is late at
//    the sync points of its slow half only, however much faster its fast half is; a bursty rank
//    that is the slowest by more than its bursts reach adds nothing. A bursty rank should thus
//    finish its mean work early: the target gives it a head start (fewer units than its mean
//    speed says) of 0, B or 2 B, the one the predicted step likes best.
//  - Descheduling (optional): a time-sliced rank may be descheduled inside a collective
//    (sync_ledger.h). After the last rank arrives, the collective's own work needs every rank on
//    its CPU; a rank that arrives last and is off during that delays everyone by the time it is
//    off, its descheduled ms D per step (measured where it is last everywhere: the even split of
//    a slow rank). Where it arrives first, what costs is its hold H (the others' wait, were it
//    first everywhere, for its next slice). Neither moves with its share of the work (a slice
//    costs the same whatever it holds; the sync points are the same), but how often it is first
//    does: at the fraction e of sync points it costs (1 - e) D + e H, and these add over the
//    ranks (each one's slices fall at other sync points). With a mean gap G = T_r - T_others
//    and burst B (its arrivals spread about +-2 B/N a sync point around the mean),
//    e = clamp(1/2 - G / (4 B)): never first when it is the slowest by 2 B, always first when it
//    is ahead by 2 B, half the time when balanced; with no burst the step 1 (ahead), 1/2
//    (balanced), 0 (behind).
//    With 3 or more ranks "the others" are the latest of them: T_others is the largest of the
//    other ranks' mean times, so "first" means ahead of the last of the others (someone arrives
//    after the rank and may wait for its slice: its hold costs) and "last" means behind every
//    other rank (its descheduled time delays them all). A rank in the middle, behind a faster one
//    and ahead of a slower one, counts as first.
//    With no bursts, holds or descheduling all of this is exactly the mean-speed planner.
#include <map>
#include <string>
#include <vector>

#include "parallel/comm/cost_model.h"
#include "parallel/tp/partition.h"

namespace flextp {

// The work (in arbitrary units, e.g. FLOPs) and the bytes (weights + optimizer state) of one unit
// of each group, and the replicated work every rank does whatever it holds.
struct UnitCosts {
  std::map<std::string, double> work;
  std::map<std::string, double> bytes;
  double replicated_work = 0;
};

// Work per rank under a partition (replicated work included).
std::vector<double> rank_work(const Partition& p, const UnitCosts& c);
// The step's compute time: per group its slowest rank, plus the replicated work at the slowest speed.
double predicted_step_ms(const Partition& p, const std::vector<double>& speed, const UnitCosts& c);
// The waits that bursts, holds and descheduling (per rank, ms per step; empty: none) add to the
// predicted step. burst_shapes: each rank's burst shape (BurstSample; empty, or a rank's empty:
// steady); the burst in ms says how often a rank arrives first, its shape how late it comes.
double burst_wait_ms(const Partition& p, const std::vector<double>& speed, const UnitCosts& c,
                     const std::vector<double>& burst_ms, const std::vector<double>& hold_ms = {},
                     const std::vector<double>& descheduled_ms = {},
                     const std::vector<std::vector<double>>& burst_shapes = {});
// The step with those waits: predicted_step_ms + burst_wait_ms.
double predicted_step_ms(const Partition& p, const std::vector<double>& speed, const UnitCosts& c,
                         const std::vector<double>& burst_ms, const std::vector<double>& hold_ms = {},
                         const std::vector<double>& descheduled_ms = {},
                         const std::vector<std::vector<double>>& burst_shapes = {});
// E[max_r mean_ms[r] x_r] over independent x_r, each equally likely any value of shapes[r] (an
// empty shape: 1): when the slowest of ranks so spread arrives at a sync point.
double expected_slowest_ms(const std::vector<double>& mean_ms, const std::vector<std::vector<double>>& shapes);
// The lower bound: all work spread perfectly over the total speed.
double ideal_step_ms(const Partition& p, const std::vector<double>& speed, const UnitCosts& c);

// The balanced target for these speeds, reached from `current` with the fewest moves.
Partition balanced_partition(const Partition& current, const std::vector<double>& speed, const UnitCosts& c);
// The same with a head start per rank (ms of mean compute it should finish early by, spread over
// the groups by their share of the work): a bursty rank gets fewer units.
Partition balanced_partition(const Partition& current, const std::vector<double>& speed, const UnitCosts& c,
                             const std::vector<double>& head_start_ms);
// The best target for these speeds and bursts: the head start 0, B or 2 B that the predicted step
// (all its waits included) likes best; with no bursts, balanced_partition.
Partition burst_aware_partition(const Partition& current, const std::vector<double>& speed, const UnitCosts& c,
                                const std::vector<double>& burst_ms, const std::vector<double>& hold_ms = {},
                                const std::vector<double>& descheduled_ms = {},
                                const std::vector<std::vector<double>>& burst_shapes = {});

struct PlannerOptions {
  int64_t horizon = 50;    // steps over which a migration must pay for itself
  double min_gain = 0.1;   // and make the step at least this much faster (noise guard)
  bool head_starts = true; // bursty ranks may get fewer units than their mean speed says
};

struct Plan {
  bool migrate = false;
  Partition target;
  int64_t units_moved = 0;
  double bytes = 0;
  double now_ms = 0, after_ms = 0, transfer_ms = 0, ideal_ms = 0;
  double burst_wait_ms = 0;  // the waits bursts and slices add to the step the plan ends in (after_ms, or now_ms kept)
  std::string str() const;
};

// The units, bytes and transfer time of the move from `current` to plan.target, into the plan.
void count_moves(const Partition& current, const UnitCosts& c, const CommCostModel& comm, Plan& plan);

// burst_ms, hold_ms, descheduled_ms, burst_shapes: each rank's (the monitor's smoothed ones);
// empty: the mean-speed planner.
Plan plan_migration(const Partition& current, const std::vector<double>& speed, const UnitCosts& c,
                    const CommCostModel& comm, const PlannerOptions& o, const std::vector<double>& burst_ms = {},
                    const std::vector<double>& hold_ms = {}, const std::vector<double>& descheduled_ms = {},
                    const std::vector<std::vector<double>>& burst_shapes = {});

}  // namespace flextp

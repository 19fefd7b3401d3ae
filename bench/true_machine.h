#pragma once
// bench_simulate --oracle's "true machine": how long a tensor-parallel step takes on ranks of
// given speeds, modelled the way a real machine departs from the planner's model
// (parallel/balance/planner.h, which prices every group's units at each rank's speed and the
// replicated work at the slowest rank's), and the search for the best static split over a grid
// of weights, the oracle the balancer is compared with. The true machine
//  - meets at a collective after every unit group's work (one segment per group, in the
//    partition's order), and every rank does its share of the replicated work (LayerNorms,
//    residual adds: spread evenly over the segments) inside each segment at its own speed;
//  - pays a fixed time per unit it runs per step (launches, small GEMMs' poor efficiency) that
//    no slowdown changes;
//  - spends a fixed time per step in the collectives, the same on every rank;
//  - multiplies each rank's compute in a step by a factor of noise.
// So the planner's proportional split is not the optimum: a slow rank should hold fewer units
// for the replicated work it does slowly, and more for the overhead it pays at full speed.
#include <map>
#include <string>
#include <vector>

#include "parallel/balance/planner.h"
#include "parallel/tp/partition.h"

namespace flextp {

struct TrueMachine {
  ModelCosts model;               // the model's unit groups as the planner prices them (nn/unit_costs.h)
  double work_per_ms = 1;         // what a rank of speed 1 computes per ms (units of a unit's work)
  double unit_overhead_ms = 0;    // per unit a rank runs per step, whatever its speed
  double collectives_ms = 0;      // per step
};

// The units each rank runs per group: runs[rank][group].
using UnitRuns = std::vector<std::map<std::string, int64_t>>;
// What a partition runs when no unit is skipped.
UnitRuns units_run(const Partition& p);

struct TrueStep {
  double step_ms = 0;
  std::vector<double> compute_ms;  // each rank's own time in the step; it waits the rest
};
// One step at these speeds (speed 1: work_per_ms); noise[r] multiplies rank r's compute (empty: 1).
TrueStep true_step(const TrueMachine& m, const UnitRuns& runs, const std::vector<double>& speed,
                   const std::vector<double>& noise = {});
// The fluid bound: every group's units split in fractions so that its segment ends at the same
// time on every rank, plus the collectives.
double fluid_ideal_ms(const TrueMachine& m, const std::vector<double>& speed);

// The fastest static split of all (noise free): the groups' segments add up, so each group is
// split on its own, every rank holding as many units as fit in the shortest segment that can
// hold them all. The reference that
// --tp-weights' grid (below) only approximates: its proportional rounding puts the same
// remainder on the same rank in every layer.
Partition best_split(const TrueMachine& m, const std::vector<double>& speed);

// Every weight vector with one of `levels` per rank, deduplicated by ratio (scaled so that the
// smallest weight is 1), in the order first met.
std::vector<std::vector<double>> weight_grid(const std::vector<double>& levels, int ranks);

struct StaticSplit {
  std::vector<double> weights;  // the first grid point that gives this partition
  Partition partition;
  double step_ms = 0;           // noise free
};
// The distinct partitions Partition::proportional makes of the grid's weights, fastest first
// (ties in the grid's order): the first is the oracle.
std::vector<StaticSplit> static_splits(const TrueMachine& m, const std::vector<double>& speed,
                                       const std::vector<double>& levels);

}  // namespace flextp

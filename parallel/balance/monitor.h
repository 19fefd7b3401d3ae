#pragma once
// The monitor: every step each rank reports its compute time (outside collectives, emulated
// slowdown included), its wait time (inside collectives) and its work (the cost of the units it
// holds plus the replicated part); an all-gather gives every rank the same table, and each
// rank's speed (work per ms) is smoothed by an exponential moving average so that noise does
// not trigger moves. A change that persists (two samples in a row off the average by more than
// `jump`, the same way) replaces the average at once: a lasting slowdown is seen in two steps,
// a one-step blip is not. Every rank then holds identical numbers: the planner needs no
// coordinator. Resizing, which costs nothing to undo, may act on one sample (fast_speeds).
// Each rank also reports its step's burst (BurstMeter, burst_meter.h: how far its compute
// segments ran over their own means, the waits it makes the others suffer beyond what its mean
// speed explains), smoothed by the same average, and what its time slices cost the others beyond
// that (sync_ledger.h): how long it was descheduled inside collectives, its hold (what the others
// would wait for it per step were it first at every sync point), and its lateness (the time the
// others waited for its arrival, from every rank's arrival at every sync point, all-gathered
// with the row).
#include <vector>

#include "core/unit_layout.h"
#include "parallel/balance/burst_meter.h"
#include "parallel/balance/sync_ledger.h"
#include "parallel/comm/communicator.h"

namespace flextp {

struct RankRow {
  double compute_ms = 0, wait_ms = 0, work = 0;
  double speed = 0;  // smoothed work per ms
  double burst_ms = 0;  // smoothed burst per step: ms over its segments' means (0: steady)
  std::vector<double> burst_shape = std::vector<double>(kBurstShapePoints, 1.0);  // smoothed, per point (all 1: steady)
  double last_raw = 0;  // the previous step's work per ms
  // Smoothed per step (sync_ledger.h): ms descheduled inside collectives; the others' wait if it
  // were first at every sync point; the others' wait for its arrival (where it came last).
  double descheduled_ms = 0, hold_ms = 0, late_ms = 0;
  int64_t collectives = 0;  // sync points of its last step on the row (at most Monitor::kSyncSlots)
  UnitCounts units;  // units held per kind, and how many of them resizing skipped in the step
};

// Every rank's smoothed burst per step in a table, ms, and its burst's shape (what the planner
// adds to its cost).
std::vector<double> bursts_of(const std::vector<RankRow>& table);
std::vector<std::vector<double>> burst_shapes_of(const std::vector<RankRow>& table);
// Every rank's smoothed hold, and its descheduled time per step that fell after the others had
// arrived (its time off spread evenly over its wait, the others' lateness taken out), ms: what
// the planner charges where it is first, and where it is last.
std::vector<double> holds_of(const std::vector<RankRow>& table);
std::vector<double> descheduled_of(const std::vector<RankRow>& table);

// The step a table measured: its slowest rank's compute and waits (every rank's are about the
// same, since all meet at the collectives; the slowest holds the others' last wait).
double step_ms_of(const std::vector<RankRow>& table);

class Monitor {
 public:
  // window: the EMA's span in steps (alpha = 2 / (window + 1)).
  Monitor(int ranks, int window, double jump = 0.25);
  // syncs: this rank's step at its collectives (StepClock::syncs; none where unmeasured).
  void record(Communicator& comm, double compute_ms, double wait_ms, double work, const UnitCounts& units,
              const BurstSample& burst = {}, const SyncLedger& syncs = SyncLedger());
  // Every rank's row, as `row` makes them, in rank order: what record gathers (the trainer
  // gathers them with other bookkeeping in one collective and hands them over here).
  void ingest(const std::vector<std::vector<double>>& rows);
  // One rank's row of the all-gathered table (what a test plays for the other ranks).
  static std::vector<double> row(double compute_ms, double wait_ms, double work, const UnitCounts& units,
                                 const BurstSample& burst = {}, const SyncLedger& syncs = SyncLedger());
  // The sync points of a step whose arrivals travel on the row (the first ones of a longer step).
  static constexpr int kSyncSlots = 256;
  const std::vector<RankRow>& table() const { return rows_; }
  std::vector<double> speeds() const;
  // For decisions that are cheap to undo (resizing): the last sample where it is off the
  // average by more than `jump`, the average otherwise. A slowdown is seen after one step.
  std::vector<double> fast_speeds() const;
  int64_t samples() const { return samples_; }

 private:
  std::vector<RankRow> rows_;
  double alpha_, jump_;
  int64_t samples_ = 0;
};

}  // namespace flextp

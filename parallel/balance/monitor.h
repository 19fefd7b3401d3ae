#pragma once
// The monitor: every step each rank reports its compute time (outside collectives, emulated
// slowdown included), its wait time (inside collectives) and its work (the cost of the units it
// holds plus the replicated part); an all-gather gives every rank the same table, and each
// rank's speed (work per ms) is smoothed by an exponential moving average so that noise does
// not trigger moves. A change that persists (two samples in a row off the average by more than
// `jump`, the same way) replaces the average at once: a lasting slowdown is seen in two steps,
// a one-step blip is not. Every rank then holds identical numbers: the planner needs no
// coordinator. Resizing, which costs nothing to undo, may act on one sample (fast_speeds).
#include <cstddef>
#include <vector>

#include "core/unit_layout.h"
#include "parallel/comm/communicator.h"

namespace flextp {

// What one rank reports of its step to every rank.
struct RankReport {
  double compute_ms = 0, wait_ms = 0;
  double work = 0;   // the cost of the units it ran, plus the replicated work
  UnitCounts units;  // units held per kind, and how many of them resizing skipped in the step

  // On the wire, as the doubles of one row of an all-gather (parallel/comm/gather_rows.h): the
  // one place that sets their order.
  std::vector<double> to_wire() const;
  static RankReport from_wire(const std::vector<double>& wire);
  static size_t wire_size();
};

// Every rank's report, in rank order, from one all-gather.
std::vector<RankReport> gather_reports(Communicator& comm, const RankReport& mine);

// A rank's row of the monitor's table: its last report and its speed.
struct RankRow : RankReport {
  double speed = 0;     // smoothed work per ms
  double last_raw = 0;  // the previous step's work per ms
};

// The step a table measured, as far as the partition decides it: its slowest rank's compute and
// waits (every rank's are about the same, since all meet at the collectives; the slowest holds the
// others' last wait), less the transfers' own time, the least wait of any rank, which no move or
// skip changes. So a link that slows during a trial is not taken for a bad move (link_watch.h).
double step_ms_of(const std::vector<RankRow>& table);
// The transfers' own time in that table: the least wait of any rank (the slowest waits for nobody).
double least_wait_ms(const std::vector<RankRow>& table);

class Monitor {
 public:
  // window: the EMA's span in steps (alpha = 2 / (window + 1)).
  Monitor(int ranks, int window, double jump = 0.25);
  // Every rank's report of the step just ended, in rank order.
  void record(const std::vector<RankReport>& reports);
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

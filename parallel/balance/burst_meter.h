#pragma once
// How much a rank's bursts cost the others, measured on the rank alone. A rank that runs in time
// slices (a noisy neighbour on its core or GPU) is late at some collectives and early at others;
// whoever is on time waits for it at each one where it is late, although its mean speed, which
// the planner balances, says nothing is amiss. The meter keeps, per sync point of the step (the
// k-th compute segment, which holds the same work every step), the running mean of the segment's
// time, and takes as the step's burst the sum over sync points of how far each segment ran over
// its mean scaled to the step's own pace (the median of its segments' times over their means): the time
// by which this rank, at its pace elsewhere, keeps the others waiting at a collective where they
// are on time. A rank slowed evenly over a step (a lasting slowdown, an emulated straggler's
// onset) has no burst: that is a change of speed, which the monitor tracks. The planner adds the
// burst to the rank's cost (planner.h).
//
// Why this and not an attribution of the others' waits to the last arriver: that needs every
// rank's per-segment times on every rank (a table as wide as the step has collectives, whose
// length the ranks must first agree on), and it cannot tell a rank that is late because it is
// bursty from one that is late because it holds more work, nor a rank descheduled inside a
// collective from one that arrived late: in a balanced split both ranks are "last" half the
// time. The deviation from the rank's own per-segment mean is local, costs one number on the
// monitor's row, and is zero for a rank that is slow but steady (the emulated straggler), so the
// mean-speed model stays exactly as it was where there are no bursts.
//
// The burst in ms says how much a rank runs late, not how its lateness is spread: a rank slow
// in half of every step (a duty cycle) and one slow now and then by as much cost the others
// differently once it holds more or less work than they do. So the meter also keeps the step's
// shape: its segments' times over their means, relative to the step's own mean pace, as
// kBurstShapePoints equally likely values (quantiles weighted by the segments' means, their mean
// 1). The planner takes the step at a sync point as the expected slowest of the ranks' arrivals,
// each rank's mean time scaled by a draw from its shape (planner.h).
#include <cstdint>
#include <vector>

namespace flextp {

inline constexpr int kBurstShapePoints = 8;

// A step's burst: its ms, and its shape (kBurstShapePoints values; all 1: steady).
struct BurstSample {
  BurstSample() : BurstSample(0.0) {}
  explicit BurstSample(double burst_ms) : ms(burst_ms), shape(kBurstShapePoints, 1.0) {}  // steady
  double ms;
  std::vector<double> shape;
};

// The shape of one step: segment_ms over mean_ms (the segments' means before the step), relative
// to the step's mean pace, as kBurstShapePoints weighted quantiles scaled to a mean of 1.
std::vector<double> burst_shape(const std::vector<double>& segment_ms, const std::vector<double>& mean_ms);

class BurstMeter {
 public:
  // window: the span in steps of the per-segment means (alpha = 2 / (window + 1)).
  explicit BurstMeter(int window = 8);
  // One step's compute segments, in order. Returns the step's burst in ms: the sum over
  // segments of max(0, time - pace x the segment's mean before this step), pace = the lower
  // median of time / mean over the segments; and its shape (burst_shape). A step whose number of
  // segments differs from the last one's restarts the means (and counts no burst: steady).
  BurstSample observe(const std::vector<double>& segment_ms);
  int64_t steps() const { return steps_; }

 private:
  double alpha_;
  std::vector<double> mean_;
  int64_t steps_ = 0;
};

}  // namespace flextp

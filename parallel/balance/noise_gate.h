#pragma once
// Whether a rank's slowdown is clear of its own noise, so that lossy resizing never starts on a
// shared machine's jitter. Per rank it keeps the speeds (work per ms, as the monitor measured
// them) of its last `window` steps in which every rank ran every unit; their median is the
// rank's baseline and the median absolute deviation of speed / baseline its noise. A step's
// speed is a clear slowdown when it is below the baseline by more than max(k x noise, floor),
// and by more than `young_floor` while fewer than `young` steps are kept (the noise of a few
// samples is underestimated), but always beyond `ceiling`: no noise hides a drop of more than
// 45% (a 1.8x slowdown), so a 2x slowdown is clear from its first step. A drop that is clear
// but within the ceiling counts only on its second step in a row (a single slow step is how a
// shared machine's jitter looks). Before `min_samples` steps nothing is clear.
// Fed from the table every rank sees alike, so every rank judges alike; no clocks.
#include <deque>
#include <vector>

#include "parallel/balance/monitor.h"

namespace flextp {

struct NoiseGateOptions {
  int window = 32, min_samples = 4, young = 16;
  double k = 4, floor = 0.3, young_floor = 0.4, ceiling = 0.45;
};

// The rule on its own: whether `speed` is a clear slowdown from these quiet speeds.
bool clear_slowdown(double speed, const std::vector<double>& quiet, const NoiseGateOptions& o);

class NoiseGate {
 public:
  explicit NoiseGate(NoiseGateOptions o = {});
  // Called once per step with the table of the step just measured: whether some rank's speed
  // in it is a clear slowdown. The step then joins the window if every rank ran every unit. A
  // table without measured times (speeds injected without them) cannot be judged: true.
  bool observe(const std::vector<RankRow>& table);
  // The noise it measures: the largest rank's k x median absolute deviation of speed / baseline
  // (0 before min_samples quiet steps). The closed loop holds a resize's measured gain to it.
  double noise() const;

 private:
  NoiseGateOptions o_;
  std::vector<std::deque<double>> quiet_;  // per rank, the speeds of its last quiet steps
  std::vector<bool> last_clear_;           // per rank, whether its last step was a clear slowdown
};

}  // namespace flextp

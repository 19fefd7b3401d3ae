#include "parallel/balance/noise_gate.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/timer.h"

namespace flextp {
namespace {
// The median absolute deviation of x / baseline over the quiet speeds.
double relative_mad(const std::vector<double>& quiet, double baseline) {
  std::vector<double> deviation;
  for (double x : quiet) deviation.push_back(std::abs(x / baseline - 1));
  return median(deviation);
}
}  // namespace

bool clear_slowdown(double speed, const std::vector<double>& quiet, const NoiseGateOptions& o) {
  if (static_cast<int>(quiet.size()) < o.min_samples) return false;
  double baseline = median(quiet);
  if (baseline <= 0) return false;
  double threshold = std::max(o.k * relative_mad(quiet, baseline), o.floor);
  if (static_cast<int>(quiet.size()) < o.young) threshold = std::max(threshold, o.young_floor);
  threshold = std::min(threshold, o.ceiling);
  return speed < baseline * (1 - threshold);
}

NoiseGate::NoiseGate(NoiseGateOptions o) : o_(o) {
  FLEXTP_CHECK(o_.window >= o_.min_samples && o_.min_samples >= 1 && o_.k >= 0 && o_.floor >= 0 &&
                   o_.floor <= o_.young_floor && o_.young_floor <= o_.ceiling && o_.ceiling < 1,
               "the noise gate needs window >= min_samples >= 1, k >= 0 and 0 <= floor <= young_floor <= ceiling < 1");
}

bool NoiseGate::observe(const std::vector<RankRow>& table) {
  bool measured = !table.empty(), skipping = false;
  for (const RankRow& r : table) measured = measured && r.compute_ms > 0, skipping = skipping || r.units.skipped > 0;
  if (!measured) return true;
  quiet_.resize(table.size());
  last_clear_.resize(table.size(), false);
  bool clear = false;
  for (size_t r = 0; r < table.size(); ++r) {
    double speed = table[r].work / table[r].compute_ms;
    std::deque<double>& quiet = quiet_[r];
    const std::vector<double> known(quiet.begin(), quiet.end());
    // Beyond the ceiling a drop is clear at once; below it, only on a second step in a row: a
    // shared machine takes a core away for one step now and then (1.3-1.8x on 2 of 3 quiet
    // 600-step runs), and one step says nothing of a slowdown that lasts.
    const bool now = clear_slowdown(speed, known, o_);
    NoiseGateOptions beyond = o_;
    beyond.k = beyond.floor = beyond.young_floor = o_.ceiling;
    clear = clear || (now && (last_clear_[r] || clear_slowdown(speed, known, beyond)));
    last_clear_[r] = now;
    // Slow steps join too, so that the baseline follows a lasting change (once migrated, say).
    if (skipping) continue;
    quiet.push_back(speed);
    if (static_cast<int>(quiet.size()) > o_.window) quiet.pop_front();
  }
  return clear;
}

double NoiseGate::noise() const {
  double worst = 0;
  for (const std::deque<double>& q : quiet_) {
    const std::vector<double> quiet(q.begin(), q.end());
    if (static_cast<int>(quiet.size()) >= o_.min_samples && median(quiet) > 0)
      worst = std::max(worst, o_.k * relative_mad(quiet, median(quiet)));
  }
  return worst;
}

}  // namespace flextp

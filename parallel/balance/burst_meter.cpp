#include "parallel/balance/burst_meter.h"

#include <algorithm>

#include "core/error.h"

namespace flextp {

BurstMeter::BurstMeter(int window) : alpha_(2.0 / (window + 1.0)) {
  FLEXTP_CHECK(window >= 1, "the burst meter's window must be at least 1 step, got ", window);
}

double BurstMeter::observe(const std::vector<double>& segment_ms) {
  if (segment_ms.size() != mean_.size()) {
    // A new shape of step (the first, or one after a change in the collectives): no means yet.
    mean_ = segment_ms;
    steps_ = 1;
    return 0.0;
  }
  // The step's own pace, the (lower) median of its segments' times over their means: a rank
  // slowed evenly over the step (a lasting slowdown, which the monitor's speed tracks) is late at
  // no sync point in particular, and the median is not moved by the late segments themselves.
  std::vector<double> ratio;
  for (size_t k = 0; k < segment_ms.size(); ++k)
    if (mean_[k] > 0) ratio.push_back(segment_ms[k] / mean_[k]);
  double pace = 1.0;
  if (!ratio.empty()) {
    auto mid = ratio.begin() + static_cast<std::ptrdiff_t>((ratio.size() - 1) / 2);
    std::nth_element(ratio.begin(), mid, ratio.end());
    pace = *mid;
  }
  double burst = 0;
  for (size_t k = 0; k < segment_ms.size(); ++k) {
    burst += std::max(0.0, segment_ms[k] - pace * mean_[k]);
    mean_[k] += alpha_ * (segment_ms[k] - mean_[k]);
  }
  ++steps_;
  return burst;
}

}  // namespace flextp

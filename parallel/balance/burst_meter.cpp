#include "parallel/balance/burst_meter.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace flextp {

std::vector<double> burst_shape(const std::vector<double>& segment_ms, const std::vector<double>& mean_ms) {
  std::vector<std::pair<double, double>> ratio;  // (time / mean, mean) per segment
  double time = 0, mean = 0;
  for (size_t k = 0; k < segment_ms.size() && k < mean_ms.size(); ++k)
    if (mean_ms[k] > 0 && std::isfinite(mean_ms[k]) && segment_ms[k] > 0 && std::isfinite(segment_ms[k])) {
      ratio.push_back({segment_ms[k] / mean_ms[k], mean_ms[k]});
      time += segment_ms[k];
      mean += mean_ms[k];
    }
  std::vector<double> shape(kBurstShapePoints, 1.0);
  if (ratio.empty() || time <= 0) return shape;
  // Each segment stands for its share of the step's mean time: a long segment late says more of
  // the step than a short one.
  std::sort(ratio.begin(), ratio.end());
  double below = 0, sum = 0;
  size_t i = 0;
  for (int j = 0; j < kBurstShapePoints; ++j) {
    const double at = (j + 0.5) / kBurstShapePoints * mean;
    while (i + 1 < ratio.size() && below + ratio[i].second < at) below += ratio[i++].second;
    shape[j] = ratio[i].first;
    sum += shape[j];
  }
  if (!(sum > 0) || !std::isfinite(sum)) return std::vector<double>(kBurstShapePoints, 1.0);
  for (double& x : shape) x *= kBurstShapePoints / sum;
  return shape;
}

BurstMeter::BurstMeter(int window) : alpha_(2.0 / (window + 1.0)) {
  FLEXTP_CHECK(window >= 1, "the burst meter's window must be at least 1 step, got ", window);
}

BurstSample BurstMeter::observe(const std::vector<double>& segment_ms) {
  if (segment_ms.size() != mean_.size()) {
    // A new shape of step (the first, or one after a change in the collectives): no means yet.
    mean_ = segment_ms;
    steps_ = 1;
    return {};
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
  BurstSample out;
  out.shape = burst_shape(segment_ms, mean_);
  for (size_t k = 0; k < segment_ms.size(); ++k) {
    out.ms += std::max(0.0, segment_ms[k] - pace * mean_[k]);
    mean_[k] += alpha_ * (segment_ms[k] - mean_[k]);
  }
  ++steps_;
  return out;
}

}  // namespace flextp

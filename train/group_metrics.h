#pragma once
// Metrics of the --metrics log that need every rank's share (a norm over the tensor-parallel
// group, a sum over units), each declared once: its line in group_metrics.cpp's list. After the
// backward every rank computes its shares; they travel in the step exchange (step_exchange.h,
// no collective of their own); every rank sums the group's into the values, which the step's
// report carries and the log writes under the metric's name.
#include <vector>

#include "nn/gpt.h"
#include "optim/clip.h"

namespace flextp {

// A rank's shares of a metric, one per value, as the gradient norm's squares are: `split` summed
// over the group's ranks (in rank order), `replicated` (the same on every rank) taken once.
using MetricShares = std::vector<GradSquares>;

struct GroupMetric {
  const char* name;  // its key in the metrics log
  bool list;         // a list of values (e.g. one per block), else one value
  // This rank's shares, from the gradients summed over the replicas.
  MetricShares (*shares)(const GPT& model, const std::vector<Parameter*>& params);
  double (*value)(double sum);  // the value from a share summed over the group (a norm: its root)
};
const std::vector<GroupMetric>& group_metrics();

struct MetricValues {
  const char* name;
  bool list;
  std::vector<double> values;  // NaN on a step whose loss was not finite
};

// This rank's shares of each metric, in the list's order: NaN when `finite` is false (no summed
// gradients), as the norm's squares are.
std::vector<MetricShares> metric_shares(const GPT& model, const std::vector<Parameter*>& params, bool finite,
                                        const std::vector<GroupMetric>& metrics = group_metrics());
// The values of each metric from every rank's shares (ranks[r][m]: rank r's of metric m).
std::vector<MetricValues> metric_values(const std::vector<std::vector<MetricShares>>& ranks,
                                        const std::vector<GroupMetric>& metrics = group_metrics());

}  // namespace flextp

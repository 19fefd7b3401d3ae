#include "train/group_metrics.h"

#include <cmath>

#include "core/error.h"

namespace flextp {

const std::vector<GroupMetric>& group_metrics() {
  // One line each: {name, list, shares, value}; docs/flags.md's "What a step logs" names them.
  static const std::vector<GroupMetric> metrics = {};
  return metrics;
}

std::vector<MetricShares> metric_shares(const GPT& model, const std::vector<Parameter*>& params, bool finite,
                                        const std::vector<GroupMetric>& metrics) {
  std::vector<MetricShares> out;
  for (const GroupMetric& m : metrics) {
    out.push_back(m.shares(model, params));
    if (!finite)
      for (GradSquares& s : out.back()) s = {NAN, NAN};
  }
  return out;
}

std::vector<MetricValues> metric_values(const std::vector<std::vector<MetricShares>>& ranks,
                                        const std::vector<GroupMetric>& metrics) {
  FLEXTP_CHECK(!ranks.empty(), "a group metric needs the shares of at least one rank");
  std::vector<MetricValues> out;
  for (size_t m = 0; m < metrics.size(); ++m) {
    out.push_back({metrics[m].name, metrics[m].list, {}});
    for (size_t i = 0; i < ranks[0].at(m).size(); ++i) {
      double split = ranks[0][m][i].split;  // in rank order, as optim/clip.cpp's norm_of
      for (size_t r = 1; r < ranks.size(); ++r) split += ranks[r].at(m).at(i).split;
      out.back().values.push_back(metrics[m].value(split + ranks[0][m][i].replicated));
    }
  }
  return out;
}

}  // namespace flextp

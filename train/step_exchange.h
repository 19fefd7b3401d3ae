#pragma once
// What each rank of a tensor-parallel group tells the others once a step, after the backward
// (Trainer::step): its monitor row, the squares of its gradients (the global norm), the signal
// it was asked to stop by and its shares of the group metrics (train/group_metrics.h). It travels
// as one all-gathered row of doubles (gather_rows.h): a new number is a field here and a line in
// each of to_wire and from_wire; a new group metric needs no edit here.
#include <vector>

#include "optim/clip.h"
#include "parallel/balance/monitor.h"
#include "train/group_metrics.h"

namespace flextp {

struct StepExchange {
  RankReport report;
  GradSquares squares;   // NaN where the loss was not finite (no gradients summed)
  int stop_request = 0;  // train/stop_signals.h; 0: none
  std::vector<MetricShares> metrics;  // each group metric's, in group_metrics()'s order

  std::vector<double> to_wire() const;
  static StepExchange from_wire(const std::vector<double>& wire);  // an error names a row of another size
};

}  // namespace flextp

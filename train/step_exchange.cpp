#include "train/step_exchange.h"

#include "core/error.h"

namespace flextp {

std::vector<double> StepExchange::to_wire() const {
  std::vector<double> wire = report.to_wire();
  wire.insert(wire.end(), {squares.split, squares.replicated, static_cast<double>(stop_request)});
  for (const MetricShares& m : metrics) {  // each metric's count of shares, then the shares
    wire.push_back(static_cast<double>(m.size()));
    for (const GradSquares& s : m) wire.insert(wire.end(), {s.split, s.replicated});
  }
  return wire;
}

StepExchange StepExchange::from_wire(const std::vector<double>& wire) {
  const size_t n = RankReport::wire_size();
  FLEXTP_CHECK(wire.size() >= n + 3, "a rank's step exchange has ", wire.size(), " values, not ", n + 3, " or more");
  StepExchange e;
  e.report = RankReport::from_wire({wire.begin(), wire.begin() + n});
  e.squares = {wire[n], wire[n + 1]};
  e.stop_request = static_cast<int>(wire[n + 2]);
  for (size_t at = n + 3; at < wire.size();) {
    const double count = wire[at++];
    FLEXTP_CHECK(count >= 0 && 2 * count <= static_cast<double>(wire.size() - at), "a rank's step exchange has ",
                 wire.size(), " values, too few for the ", count, " shares of a metric at value ", at - 1);
    MetricShares& m = e.metrics.emplace_back();
    for (size_t i = 0; i < static_cast<size_t>(count); ++i, at += 2) m.push_back({wire[at], wire[at + 1]});
  }
  return e;
}

}  // namespace flextp

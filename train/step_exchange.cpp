#include "train/step_exchange.h"

#include "core/error.h"

namespace flextp {

std::vector<double> StepExchange::to_wire() const {
  std::vector<double> wire = report.to_wire();
  wire.insert(wire.end(), {squares.split, squares.replicated, static_cast<double>(stop_request)});
  return wire;
}

StepExchange StepExchange::from_wire(const std::vector<double>& wire) {
  const size_t n = RankReport::wire_size();
  FLEXTP_CHECK(wire.size() == n + 3, "a rank's step exchange has ", wire.size(), " values, not ", n + 3);
  StepExchange e;
  e.report = RankReport::from_wire({wire.begin(), wire.begin() + n});
  e.squares = {wire[n], wire[n + 1]};
  e.stop_request = static_cast<int>(wire[n + 2]);
  return e;
}

}  // namespace flextp

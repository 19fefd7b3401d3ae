#include "parallel/balance/sync_ledger.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace flextp {

void SyncLedger::clear() {
  arrival_.clear();
  inside_ = off_ = off_squared_ = 0;
}

void SyncLedger::add(double arrival_ms, double wall_ms, double cpu_ms) {
  FLEXTP_CHECK(std::isfinite(arrival_ms) && std::isfinite(wall_ms) && std::isfinite(cpu_ms) && wall_ms >= 0 &&
                   cpu_ms >= 0,
               "sync ledger: a collective at ", arrival_ms, " ms took ", wall_ms, " ms with ", cpu_ms, " ms of CPU");
  const double off = std::max(0.0, wall_ms - cpu_ms);
  arrival_.push_back(arrival_ms);
  inside_ += wall_ms;
  off_ += off;
  off_squared_ += off * off;
}

double SyncLedger::hold_ms() const {
  if (inside_ <= 0) return 0.0;
  return static_cast<double>(arrival_.size()) * off_squared_ / (2 * inside_);
}

std::vector<double> lateness_ms(const std::vector<std::vector<double>>& arrival_ms) {
  const size_t n = arrival_ms.size();
  std::vector<double> late(n, 0.0);
  if (n < 2) return late;  // one rank waits for no one
  size_t points = arrival_ms[0].size();
  for (const std::vector<double>& a : arrival_ms) points = std::min(points, a.size());
  for (size_t k = 0; k < points; ++k) {
    size_t last = 0;
    for (size_t r = 1; r < n; ++r)
      if (arrival_ms[r][k] > arrival_ms[last][k]) last = r;
    double next = -1e300;
    for (size_t r = 0; r < n; ++r)
      if (r != last) next = std::max(next, arrival_ms[r][k]);
    late[last] += arrival_ms[last][k] - next;
  }
  return late;
}

}  // namespace flextp

#include "parallel/balance/monitor.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/error.h"
#include "parallel/comm/gather_rows.h"

namespace flextp {

double least_wait_ms(const std::vector<RankRow>& table) {
  double least = table.empty() ? 0.0 : table[0].wait_ms;
  for (const RankRow& r : table) least = std::min(least, r.wait_ms);
  return least;
}

double step_ms_of(const std::vector<RankRow>& table) {
  double step = 0;
  for (const RankRow& r : table) step = std::max(step, r.compute_ms + r.wait_ms);
  return step - least_wait_ms(table);
}

size_t RankReport::wire_size() { return 3 + std::size(kUnitKinds) + 1; }

std::vector<double> RankReport::to_wire() const {
  std::vector<double> wire{compute_ms, wait_ms, work};
  for (UnitKind k : kUnitKinds) wire.push_back(static_cast<double>(units.held.at(k)));
  wire.push_back(static_cast<double>(units.skipped));
  return wire;
}

RankReport RankReport::from_wire(const std::vector<double>& wire) {
  FLEXTP_CHECK(wire.size() == wire_size(), "a rank's report has ", wire.size(), " values, not ", wire_size());
  for (double x : wire) FLEXTP_CHECK(std::isfinite(x), "a rank's report holds ", x);
  RankReport r;
  const double* at = wire.data();
  r.compute_ms = *at++;
  r.wait_ms = *at++;
  r.work = *at++;
  for (UnitKind k : kUnitKinds) r.units.held[k] = static_cast<int64_t>(*at++);
  r.units.skipped = static_cast<int64_t>(*at++);
  return r;
}

std::vector<RankReport> gather_reports(Communicator& comm, const RankReport& mine) {
  std::vector<RankReport> all;
  for (const std::vector<double>& row : all_gather_rows(comm, mine.to_wire())) all.push_back(RankReport::from_wire(row));
  return all;
}

Monitor::Monitor(int ranks, int window, double jump) : rows_(ranks), alpha_(2.0 / (window + 1.0)), jump_(jump) {
  FLEXTP_CHECK(window >= 1, "the monitor window must be at least 1 step, got ", window);
}

void Monitor::record(const std::vector<RankReport>& reports) {
  FLEXTP_CHECK(reports.size() == rows_.size(), "the monitor of ", rows_.size(), " ranks got ", reports.size(),
               " reports");
  for (size_t r = 0; r < rows_.size(); ++r) {
    RankRow& row = rows_[r];
    static_cast<RankReport&>(row) = reports[r];
    double speed = row.compute_ms > 0 ? row.work / row.compute_ms : row.speed;
    auto off = [&](double x) { return x > row.speed * (1 + jump_) ? 1 : x < row.speed * (1 - jump_) ? -1 : 0; };
    bool persistent = samples_ >= 2 && off(speed) != 0 && off(speed) == off(row.last_raw);
    if (samples_ == 0 || persistent)
      row.speed = speed;
    else
      row.speed = alpha_ * speed + (1 - alpha_) * row.speed;
    row.last_raw = speed;
  }
  ++samples_;
}

std::vector<double> Monitor::speeds() const {
  std::vector<double> s;
  for (const RankRow& r : rows_) s.push_back(r.speed);
  return s;
}

std::vector<double> Monitor::fast_speeds() const {
  std::vector<double> s;
  for (const RankRow& r : rows_) {
    bool off = r.last_raw > r.speed * (1 + jump_) || r.last_raw < r.speed * (1 - jump_);
    s.push_back(off && r.last_raw > 0 ? r.last_raw : r.speed);
  }
  return s;
}

}  // namespace flextp

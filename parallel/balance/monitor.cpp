#include "parallel/balance/monitor.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/error.h"
#include "parallel/comm/gather_rows.h"

namespace flextp {

double step_ms_of(const std::vector<RankRow>& table) {
  double step = 0;
  for (const RankRow& r : table) step = std::max(step, r.compute_ms + r.wait_ms);
  return step;
}

namespace {

// A row on the wire: the times and the work, the units held of each kind (in kUnitKinds order),
// the units skipped, the ms descheduled inside collectives, the hold, the number of sync points
// with their arrivals in kSyncSlots slots (the unused ones 0), then the step's burst and its shape.
constexpr int kRowWidth = 3 + static_cast<int>(std::size(kUnitKinds)) + 1 + 3 + Monitor::kSyncSlots + 1 + kBurstShapePoints;
constexpr int kBurstAt = kRowWidth - 1 - kBurstShapePoints;

}  // namespace

Monitor::Monitor(int ranks, int window, double jump) : rows_(ranks), alpha_(2.0 / (window + 1.0)), jump_(jump) {
  FLEXTP_CHECK(window >= 1, "the monitor window must be at least 1 step, got ", window);
}

std::vector<double> Monitor::row(double compute_ms, double wait_ms, double work, const UnitCounts& units,
                                 const BurstSample& burst, const SyncLedger& syncs) {
  FLEXTP_CHECK(burst.shape.size() == static_cast<size_t>(kBurstShapePoints), "a burst's shape has ",
               burst.shape.size(), " points, not ", kBurstShapePoints);
  std::vector<double> row{compute_ms, wait_ms, work};
  for (UnitKind k : kUnitKinds) row.push_back(static_cast<double>(units.held.at(k)));
  row.push_back(static_cast<double>(units.skipped));
  row.push_back(syncs.descheduled_ms());
  row.push_back(syncs.hold_ms());
  const std::vector<double>& arrival = syncs.arrival_ms();
  const size_t points = std::min<size_t>(arrival.size(), kSyncSlots);
  row.push_back(static_cast<double>(points));
  row.insert(row.end(), arrival.begin(), arrival.begin() + static_cast<std::ptrdiff_t>(points));
  row.resize(row.size() + (kSyncSlots - points), 0.0);
  row.push_back(burst.ms);
  row.insert(row.end(), burst.shape.begin(), burst.shape.end());
  return row;
}

void Monitor::record(Communicator& comm, double compute_ms, double wait_ms, double work, const UnitCounts& units,
                     const BurstSample& burst, const SyncLedger& syncs) {
  ingest(all_gather_rows(comm, row(compute_ms, wait_ms, work, units, burst, syncs)));
}

void Monitor::ingest(const std::vector<std::vector<double>>& rows) {
  const int n = static_cast<int>(rows_.size());
  FLEXTP_CHECK(static_cast<int>(rows.size()) == n, "the monitor of ", n, " ranks got ", rows.size(), " rows");
  // Bursts, descheduling and lateness come and go by nature: always the average, never the
  // persistence rule of speeds.
  auto smooth = [&](double& average, double x) { average = samples_ == 0 ? x : alpha_ * x + (1 - alpha_) * average; };
  std::vector<std::vector<double>> arrivals(n);
  for (int r = 0; r < n; ++r) {
    FLEXTP_CHECK(rows[r].size() == static_cast<size_t>(kRowWidth), "the monitor got a row of ", rows[r].size(),
                 " values from rank ", r, ", not ", kRowWidth);
    const double* t = rows[r].data();
    const double burst_ms = t[kBurstAt];
    FLEXTP_CHECK(std::isfinite(burst_ms) && burst_ms >= 0, "the monitor got a burst of ", burst_ms, " ms");
    for (int j = 0; j < kBurstShapePoints; ++j)
      FLEXTP_CHECK(std::isfinite(t[kBurstAt + 1 + j]) && t[kBurstAt + 1 + j] > 0, "the monitor got a burst shape of ",
                   t[kBurstAt + 1 + j], " from rank ", r);
    RankRow& row = rows_[r];
    row.compute_ms = t[0];
    row.wait_ms = t[1];
    row.work = t[2];
    const double* counts = t + 3;
    for (UnitKind k : kUnitKinds) row.units.held[k] = static_cast<int64_t>(*counts++);
    row.units.skipped = static_cast<int64_t>(*counts++);
    smooth(row.descheduled_ms, *counts++);
    smooth(row.hold_ms, *counts++);
    row.collectives = static_cast<int64_t>(*counts++);
    FLEXTP_CHECK(row.collectives >= 0 && row.collectives <= kSyncSlots, "the monitor got ", row.collectives,
                 " sync points from rank ", r, " (at most ", kSyncSlots, ")");
    arrivals[r].assign(counts, counts + row.collectives);
    counts += kSyncSlots;
    smooth(row.burst_ms, burst_ms);
    for (int j = 0; j < kBurstShapePoints; ++j) smooth(row.burst_shape[j], t[kBurstAt + 1 + j]);
    double speed = row.compute_ms > 0 ? row.work / row.compute_ms : row.speed;
    auto off = [&](double x) { return x > row.speed * (1 + jump_) ? 1 : x < row.speed * (1 - jump_) ? -1 : 0; };
    bool persistent = samples_ >= 2 && off(speed) != 0 && off(speed) == off(row.last_raw);
    if (samples_ == 0 || persistent)
      row.speed = speed;
    else
      row.speed = alpha_ * speed + (1 - alpha_) * row.speed;
    row.last_raw = speed;
  }
  std::vector<double> late = lateness_ms(arrivals);
  for (int r = 0; r < n; ++r) smooth(rows_[r].late_ms, late[r]);
  ++samples_;
}

namespace {

// One field of every rank's row, in rank order.
template <typename T>
std::vector<T> column(const std::vector<RankRow>& table, T RankRow::*field) {
  std::vector<T> out;
  for (const RankRow& r : table) out.push_back(r.*field);
  return out;
}

}  // namespace

std::vector<double> Monitor::speeds() const { return column(rows_, &RankRow::speed); }

std::vector<double> bursts_of(const std::vector<RankRow>& table) { return column(table, &RankRow::burst_ms); }

std::vector<std::vector<double>> burst_shapes_of(const std::vector<RankRow>& table) {
  return column(table, &RankRow::burst_shape);
}

std::vector<double> holds_of(const std::vector<RankRow>& table) { return column(table, &RankRow::hold_ms); }

std::vector<double> descheduled_of(const std::vector<RankRow>& table) {
  // What costs the others is the time off after the last rank arrived; a rank that waited for
  // the others' arrivals (their lateness) was off part of that wait at no one's cost. Its time
  // off is taken as spread evenly over its wait.
  std::vector<double> d;
  for (size_t r = 0; r < table.size(); ++r) {
    double others_late = 0;
    for (size_t j = 0; j < table.size(); ++j)
      if (j != r) others_late += table[j].late_ms;
    const double wait = table[r].wait_ms;
    d.push_back(wait > 0 ? table[r].descheduled_ms * std::max(0.0, wait - others_late) / wait : table[r].descheduled_ms);
  }
  return d;
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

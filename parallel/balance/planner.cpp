#include "parallel/balance/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"

namespace flextp {

std::vector<double> rank_work(const Partition& p, const UnitCosts& c) {
  std::vector<double> w(p.ranks(), c.replicated_work);
  for (const auto& [group, owners] : p.groups()) {
    double unit = c.work.count(group) ? c.work.at(group) : 0.0;
    for (int o : owners) w[o] += unit;
  }
  return w;
}

// Ranks meet at a collective after every layer's attention, MLP and vocabulary work: a step
// takes, per unit group, as long as its slowest rank, plus the replicated work at the slowest
// rank's speed.
double predicted_step_ms(const Partition& p, const std::vector<double>& speed, const UnitCosts& c) {
  double total = 0, slowest = 1e300;
  for (double s : speed) slowest = std::min(slowest, std::max(s, 1e-30));
  for (const auto& [group, owners] : p.groups()) {
    double unit = c.work.count(group) ? c.work.at(group) : 0.0;
    std::vector<double> count(p.ranks(), 0.0);
    for (int o : owners) count[o] += 1;
    double worst = 0;
    for (int r = 0; r < p.ranks(); ++r) worst = std::max(worst, count[r] * unit / std::max(speed[r], 1e-30));
    total += worst;
  }
  return total + c.replicated_work / slowest;
}

double ideal_step_ms(const Partition& p, const std::vector<double>& speed, const UnitCosts& c) {
  double work = 0, total_speed = 0;
  for (double w : rank_work(p, c)) work += w;
  for (double s : speed) total_speed += s;
  return work / std::max(total_speed, 1e-30);
}

namespace {

// Bursts (or holds) given per rank (or none at all), each finite and >= 0.
bool has_bursts(const std::vector<double>& burst_ms, int ranks, const char* what = "bursts") {
  if (burst_ms.empty()) return false;
  FLEXTP_CHECK(static_cast<int>(burst_ms.size()) == ranks, "planner: ", burst_ms.size(), " ", what, " for ", ranks,
               " ranks");
  bool any = false;
  for (double b : burst_ms) {
    FLEXTP_CHECK(std::isfinite(b) && b >= 0, "planner: ", what, " must be finite and >= 0 ms, got ", b);
    any = any || b > 0;
  }
  return any;
}

// The share of sync points at which a rank whose mean time is `gap` ms behind the others' (ahead
// when < 0), with arrivals spread by its burst, arrives first (planner.h).
double first_share(double gap, double burst) {
  if (burst <= 0) return gap < 0 ? 1.0 : gap > 0 ? 0.0 : 0.5;
  return std::clamp(0.5 - gap / (4 * burst), 0.0, 1.0);
}

// Whether any rank's shape spreads its arrivals (a shape of all 1 is a steady rank).
bool has_shapes(const std::vector<std::vector<double>>& shapes, int ranks) {
  if (shapes.empty()) return false;
  FLEXTP_CHECK(static_cast<int>(shapes.size()) == ranks, "planner: ", shapes.size(), " burst shapes for ", ranks,
               " ranks");
  bool any = false;
  for (const std::vector<double>& s : shapes)
    for (double x : s) {
      FLEXTP_CHECK(std::isfinite(x) && x > 0, "planner: a burst shape's values must be finite and > 0, got ", x);
      any = any || x != 1.0;
    }
  return any;
}

}  // namespace

double expected_slowest_ms(const std::vector<double>& mean_ms, const std::vector<std::vector<double>>& shapes) {
  FLEXTP_CHECK(shapes.empty() || shapes.size() == mean_ms.size(), "planner: ", shapes.size(), " burst shapes for ",
               mean_ms.size(), " ranks");
  // E[max] = integral over t >= 0 of P(max > t) = 1 - prod_r F_r(t), each F_r a step function:
  // walk the arrival times in order, keeping how many of each rank's values are at or below t.
  struct Arrival {
    double ms;
    int rank;
    double weight;
  };
  std::vector<Arrival> at;
  for (double m : mean_ms) FLEXTP_CHECK(std::isfinite(m) && m >= 0, "planner: mean times must be finite and >= 0 ms, got ", m);
  for (size_t r = 0; r < mean_ms.size(); ++r) {
    const bool steady = shapes.empty() || shapes[r].empty();
    const size_t k = steady ? 1 : shapes[r].size();
    for (size_t j = 0; j < k; ++j) at.push_back({mean_ms[r] * (steady ? 1.0 : shapes[r][j]), static_cast<int>(r), 1.0 / k});
  }
  if (at.empty()) return 0.0;
  std::sort(at.begin(), at.end(), [](const Arrival& a, const Arrival& b) { return a.ms < b.ms; });
  std::vector<double> below(mean_ms.size(), 0.0);  // F_r at the current time
  double expected = at.front().ms;                 // max > t surely for t below the earliest
  for (size_t i = 0; i + 1 < at.size(); ++i) {
    below[at[i].rank] += at[i].weight;
    double all_below = 1;
    for (double f : below) all_below *= std::min(f, 1.0);
    expected += (1 - all_below) * (at[i + 1].ms - at[i].ms);
  }
  return expected;
}

double burst_wait_ms(const Partition& p, const std::vector<double>& speed, const UnitCosts& c,
                     const std::vector<double>& burst_ms, const std::vector<double>& hold_ms,
                     const std::vector<double>& descheduled_ms, const std::vector<std::vector<double>>& burst_shapes) {
  const int n = p.ranks();
  const bool bursts = has_bursts(burst_ms, n), holds = has_bursts(hold_ms, n, "holds"),
             off = has_bursts(descheduled_ms, n, "descheduled times"), spread = has_shapes(burst_shapes, n);
  if ((!bursts && !holds && !off && !spread) || n < 2) return 0.0;  // one rank waits for no one
  // Each rank's mean time on its units: the replicated work is on every rank's path at the
  // slowest rank's speed (predicted_step_ms), so it moves no rank's arrival against another's.
  std::vector<double> work = rank_work(p, c), mean(n);
  for (int r = 0; r < n; ++r) mean[r] = (work[r] - c.replicated_work) / std::max(speed[r], 1e-30);
  // The bursts' waits: the expected slowest arrival over the slowest mean; the slices', added
  // over the ranks.
  double late = 0;
  if (spread) {
    // Each shape on a mean of 1 (a hand-made or median-of-points shape may be off): the
    // spread, not a change of mean speed, which the speeds already hold.
    std::vector<std::vector<double>> unit_mean = burst_shapes;
    for (std::vector<double>& shape : unit_mean) {
      double sum = 0;
      for (double x : shape) sum += x;
      for (double& x : shape) x *= static_cast<double>(shape.size()) / sum;
    }
    late = std::max(0.0, expected_slowest_ms(mean, unit_mean) - *std::max_element(mean.begin(), mean.end()));
  }
  double sliced = 0;
  for (int r = 0; r < n; ++r) {
    double others = 0;  // the latest of the others (planner.h): with 3+ ranks, not any one of them
    for (int j = 0; j < n; ++j)
      if (j != r) others = std::max(others, mean[j]);
    const double burst = bursts ? burst_ms[r] : 0.0, gap = mean[r] - others, first = first_share(gap, burst);
    if (holds) sliced += first * hold_ms[r];
    if (off) sliced += (1 - first) * descheduled_ms[r];
  }
  return late + sliced;
}

double predicted_step_ms(const Partition& p, const std::vector<double>& speed, const UnitCosts& c,
                         const std::vector<double>& burst_ms, const std::vector<double>& hold_ms,
                         const std::vector<double>& descheduled_ms, const std::vector<std::vector<double>>& burst_shapes) {
  return predicted_step_ms(p, speed, c) + burst_wait_ms(p, speed, c, burst_ms, hold_ms, descheduled_ms, burst_shapes);
}

Partition balanced_partition(const Partition& current, const std::vector<double>& speed, const UnitCosts& c) {
  return balanced_partition(current, speed, c, {});
}

Partition balanced_partition(const Partition& current, const std::vector<double>& speed, const UnitCosts& c,
                             const std::vector<double>& head_start_ms) {
  const int n = current.ranks();
  FLEXTP_CHECK(static_cast<int>(speed.size()) == n, "planner: ", speed.size(), " speeds for ", n, " ranks");
  for (double s : speed) FLEXTP_CHECK(std::isfinite(s) && s > 0, "planner: speeds must be positive, got ", s);
  FLEXTP_CHECK(head_start_ms.empty() || static_cast<int>(head_start_ms.size()) == n, "planner: ",
               head_start_ms.size(), " head starts for ", n, " ranks");
  double total_unit_work = 0;
  for (const auto& [group, owners] : current.groups())
    total_unit_work += (c.work.count(group) ? c.work.at(group) : 0.0) * static_cast<double>(owners.size());
  Partition target = current;
  for (const auto& [group, owners] : current.groups()) {
    // Each group on its own (its ranks meet at its collective): units one at a time to the rank
    // that would finish its share soonest, which minimises the group's slowest rank for equal
    // units. Ties go to the lower rank, so every rank decides alike.
    int64_t units = static_cast<int64_t>(owners.size());
    std::vector<int64_t> count(n, 0);
    const double unit = c.work.count(group) ? c.work.at(group) : 0.0;
    std::vector<double> start(n, 0.0);  // this group's share of each rank's head start
    if (!head_start_ms.empty() && total_unit_work > 0)
      for (int r = 0; r < n; ++r) start[r] = head_start_ms[r] * unit * static_cast<double>(units) / total_unit_work;
    for (int64_t i = 0; i < units; ++i) {
      int best = 0;
      for (int r = 1; r < n; ++r)
        if (head_start_ms.empty() ? (count[r] + 1) / speed[r] < (count[best] + 1) / speed[best]
                                  : (count[r] + 1) * unit / speed[r] + start[r] <
                                        (count[best] + 1) * unit / speed[best] + start[best])
          best = r;
      ++count[best];
    }
    // Fewest moves: ranks above their count release their highest units to ranks below theirs.
    std::vector<int64_t> have(n, 0);
    for (int o : owners) ++have[o];
    std::vector<int> next = owners;
    std::vector<int64_t> released;
    for (int64_t u = units - 1; u >= 0; --u) {
      int o = owners[u];
      if (have[o] > count[o]) {
        --have[o];
        released.push_back(u);
      }
    }
    std::sort(released.begin(), released.end());
    size_t k = 0;
    for (int r = 0; r < n; ++r)
      for (; have[r] < count[r]; ++have[r]) next[released[k++]] = r;
    target.set_owners(group, next);
  }
  return target;
}

Partition burst_aware_partition(const Partition& current, const std::vector<double>& speed, const UnitCosts& c,
                                const std::vector<double>& burst_ms, const std::vector<double>& hold_ms,
                                const std::vector<double>& descheduled_ms,
                                const std::vector<std::vector<double>>& burst_shapes) {
  Partition best = balanced_partition(current, speed, c);
  if (!has_bursts(burst_ms, current.ranks())) return best;  // the head starts are multiples of the bursts
  double best_ms = predicted_step_ms(best, speed, c, burst_ms, hold_ms, descheduled_ms, burst_shapes);
  for (double times : {1.0, 2.0}) {
    std::vector<double> start;
    for (double b : burst_ms) start.push_back(times * b);
    Partition t = balanced_partition(current, speed, c, start);
    double ms = predicted_step_ms(t, speed, c, burst_ms, hold_ms, descheduled_ms, burst_shapes);
    if (ms < best_ms) best = t, best_ms = ms;  // ties keep the smaller head start
  }
  return best;
}

void count_moves(const Partition& current, const UnitCosts& c, const CommCostModel& comm, Plan& plan) {
  plan.units_moved = 0;
  plan.bytes = 0;
  for (const auto& [group, owners] : current.groups()) {
    const std::vector<int>& next = plan.target.owners(group);
    for (size_t u = 0; u < owners.size(); ++u)
      if (owners[u] != next[u]) {
        ++plan.units_moved;
        plan.bytes += c.bytes.count(group) ? c.bytes.at(group) : 0.0;
      }
  }
  plan.transfer_ms = plan.units_moved ? comm.transfer_ms(plan.bytes) : 0.0;
}

Plan plan_migration(const Partition& current, const std::vector<double>& speed, const UnitCosts& c,
                    const CommCostModel& comm, const PlannerOptions& o, const std::vector<double>& burst_ms,
                    const std::vector<double>& hold_ms, const std::vector<double>& descheduled_ms,
                    const std::vector<std::vector<double>>& burst_shapes) {
  Plan plan;
  plan.target = o.head_starts ? burst_aware_partition(current, speed, c, burst_ms, hold_ms, descheduled_ms, burst_shapes)
                              : balanced_partition(current, speed, c);
  plan.now_ms = predicted_step_ms(current, speed, c, burst_ms, hold_ms, descheduled_ms, burst_shapes);
  plan.burst_wait_ms = burst_wait_ms(plan.target, speed, c, burst_ms, hold_ms, descheduled_ms, burst_shapes);
  plan.after_ms = predicted_step_ms(plan.target, speed, c) + plan.burst_wait_ms;
  plan.ideal_ms = ideal_step_ms(current, speed, c);
  count_moves(current, c, comm, plan);
  double saving = plan.now_ms - plan.after_ms;
  plan.migrate = plan.units_moved > 0 && saving * o.horizon > plan.transfer_ms &&
                 saving >= o.min_gain * plan.now_ms;
  if (!plan.migrate) {
    plan.target = current;
    plan.burst_wait_ms = burst_wait_ms(current, speed, c, burst_ms, hold_ms, descheduled_ms, burst_shapes);
  }
  return plan;
}

std::string Plan::str() const {
  char s[256];
  std::snprintf(s, sizeof s, "%s: %lld units, %.0f KiB; step %.1f -> %.1f ms (ideal %.1f), transfer %.1f ms",
                migrate ? "migrate" : "keep", static_cast<long long>(units_moved), bytes / 1024, now_ms, after_ms,
                ideal_ms, transfer_ms);
  std::string out = s;
  if (burst_wait_ms > 0) {
    std::snprintf(s, sizeof s, " (of it %.1f ms waiting for bursts)", burst_wait_ms);
    out.insert(out.find(" (ideal"), s);
  }
  return out;
}

}  // namespace flextp

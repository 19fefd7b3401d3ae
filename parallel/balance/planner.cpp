#include "parallel/balance/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace flextp {

const UnitGroup& ModelCosts::group(const std::string& name) const {
  for (const UnitGroup& g : groups)
    if (g.name == name) return g;
  FLEXTP_FAIL("the unit registry has no group '", name, "' of the partition");
}

UnitCost ModelCosts::unit(const std::string& group) const {
  for (const UnitGroup& g : groups)
    if (g.name == group) return g.cost;
  return {};
}

std::vector<double> rank_work(const Partition& p, const ModelCosts& c) {
  std::vector<double> w(p.ranks(), c.replicated_work);
  for (const auto& [group, owners] : p.groups()) {
    double unit = c.unit(group).work;
    for (int o : owners) w[o] += unit;
  }
  return w;
}

// Ranks meet at a collective after every layer's attention, MLP and vocabulary work: a step
// takes, per unit group, as long as its slowest rank, plus the replicated work at the slowest
// rank's speed.
double predicted_step_ms(const Partition& p, const std::vector<double>& speed, const ModelCosts& c,
                         const UnitsRun& run) {
  double total = 0, slowest = 1e300;
  for (double s : speed) slowest = std::min(slowest, std::max(s, 1e-30));
  for (const auto& [group, owners] : p.groups()) {
    double unit = c.unit(group).work;
    std::vector<double> count(p.ranks(), 0.0);
    for (int o : owners) count[o] += 1;
    double worst = 0;
    for (int r = 0; r < p.ranks(); ++r) {
      const double n = run ? run(group, owners, r, count[r]) : count[r];
      worst = std::max(worst, n * unit / std::max(speed[r], 1e-30));
    }
    total += worst;
  }
  return total + c.replicated_work / slowest;
}

double ideal_step_ms(const Partition& p, const std::vector<double>& speed, const ModelCosts& c) {
  double work = 0, total_speed = 0;
  for (double w : rank_work(p, c)) work += w;
  for (double s : speed) total_speed += s;
  return work / std::max(total_speed, 1e-30);
}

Partition balanced_partition(const Partition& current, const std::vector<double>& speed, const ModelCosts& c) {
  const int n = current.ranks();
  FLEXTP_CHECK(static_cast<int>(speed.size()) == n, "planner: ", speed.size(), " speeds for ", n, " ranks");
  for (double s : speed) FLEXTP_CHECK(std::isfinite(s) && s > 0, "planner: speeds must be positive, got ", s);
  Partition target = current;
  for (const auto& [group, owners] : current.groups()) {
    // Each group on its own (its ranks meet at its collective): units one at a time to the rank
    // that would finish its share soonest, which minimises the group's slowest rank for equal
    // units. Ties go to the lower rank, so every rank decides alike.
    int64_t units = static_cast<int64_t>(owners.size());
    std::vector<int64_t> count(n, 0);
    for (int64_t i = 0; i < units; ++i) {
      int best = 0;
      for (int r = 1; r < n; ++r)
        if ((count[r] + 1) / speed[r] < (count[best] + 1) / speed[best]) best = r;
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

void count_moves(const Partition& current, const ModelCosts& c, const CommCostModel& comm, Plan& plan) {
  plan.units_moved = 0;
  plan.units_to.assign(static_cast<size_t>(plan.target.ranks()), 0);
  plan.bytes = 0;
  for (const auto& [group, owners] : current.groups()) {
    const std::vector<int>& next = plan.target.owners(group);
    for (size_t u = 0; u < owners.size(); ++u)
      if (owners[u] != next[u]) {
        ++plan.units_moved;
        ++plan.units_to[static_cast<size_t>(next[u])];
        plan.bytes += c.unit(group).bytes;
      }
  }
  plan.transfer_ms = plan.units_moved ? comm.transfer_ms(plan.bytes) : 0.0;
}

Plan plan_migration(const Partition& current, const std::vector<double>& speed, const ModelCosts& c,
                    const CommCostModel& comm, const PlannerOptions& o) {
  Plan plan;
  plan.target = balanced_partition(current, speed, c);
  plan.now_ms = predicted_step_ms(current, speed, c);
  plan.after_ms = predicted_step_ms(plan.target, speed, c);
  plan.ideal_ms = ideal_step_ms(current, speed, c);
  count_moves(current, c, comm, plan);
  double saving = plan.now_ms - plan.after_ms;
  plan.migrate = plan.units_moved > 0 && saving * o.horizon > plan.transfer_ms &&
                 saving >= o.min_gain * plan.now_ms;
  if (!plan.migrate) plan.target = current;
  return plan;
}

std::string Plan::str() const {
  char s[256];
  if (undo) {  // "rank 0", or "ranks 0 (3), 2 (1)"
    std::string to;
    const auto receivers = std::count_if(units_to.begin(), units_to.end(), [](int64_t n) { return n > 0; });
    for (size_t r = 0; r < units_to.size(); ++r)
      if (units_to[r] > 0)
        to += (to.empty() ? "" : ", ") + std::to_string(r) +
              (receivers > 1 ? " (" + std::to_string(units_to[r]) + ")" : "");
    std::snprintf(s, sizeof s, "undo: %lld units, %.0f KiB, back to rank%s %s, where they were before the try (its "
                  "steps were slower); transfer %.1f ms", static_cast<long long>(units_moved), bytes / 1024,
                  receivers > 1 ? "s" : "", to.c_str(), transfer_ms);
    return s;
  }
  std::snprintf(s, sizeof s, "%s: %lld units, %.0f KiB; step %.1f -> %.1f ms (ideal %.1f), transfer %.1f ms",
                migrate ? "migrate" : "keep", static_cast<long long>(units_moved), bytes / 1024, now_ms, after_ms,
                ideal_ms, transfer_ms);
  return s;
}

}  // namespace flextp

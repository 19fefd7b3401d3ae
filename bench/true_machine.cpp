#include "bench/true_machine.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"

namespace flextp {

UnitRuns units_run(const Partition& p) {
  UnitRuns runs(p.ranks());
  for (const auto& [group, owners] : p.groups()) {
    for (auto& r : runs) r[group] = 0;
    for (int owner : owners) ++runs[owner][group];
  }
  return runs;
}

namespace {

// A rank's time in one group's segment: its share of the replicated work and its units at its
// speed, plus the overhead of its units.
double segment_ms(const TrueMachine& m, const std::string& group, int64_t units, double speed) {
  const double rate = m.work_per_ms * speed, replicated = m.model.replicated_work / m.model.groups.size();
  return (replicated + units * m.model.unit(group).work) / rate + units * m.unit_overhead_ms;
}

}  // namespace

TrueStep true_step(const TrueMachine& m, const UnitRuns& runs, const std::vector<double>& speed,
                   const std::vector<double>& noise) {
  const size_t n = speed.size();
  FLEXTP_CHECK(runs.size() == n && (noise.empty() || noise.size() == n), "true_step: ", runs.size(), " ranks' units, ",
               n, " speeds and ", noise.size(), " noise factors");
  TrueStep out;
  out.compute_ms.assign(n, 0.0);
  out.step_ms = m.collectives_ms;
  for (const UnitGroup& g : m.model.groups) {
    double slowest = 0;
    for (size_t r = 0; r < n; ++r) {
      auto held = runs[r].find(g.name);
      double ms = segment_ms(m, g.name, held == runs[r].end() ? 0 : held->second, speed[r]) *
                  (noise.empty() ? 1.0 : noise[r]);
      out.compute_ms[r] += ms;
      slowest = std::max(slowest, ms);
    }
    out.step_ms += slowest;
  }
  return out;
}

double fluid_ideal_ms(const TrueMachine& m, const std::vector<double>& speed) {
  double total = m.collectives_ms;
  for (const UnitGroup& g : m.model.groups) {
    // Fractional units x_r end the segment at t on every rank that holds any: the t at which
    // they sum to the group's units.
    auto units_by = [&](double t) {
      double x = 0;
      for (double s : speed) {
        const double start = segment_ms(m, g.name, 0, s), per_unit = segment_ms(m, g.name, 1, s) - start;
        x += std::max(0.0, (t - start) / per_unit);
      }
      return x;
    };
    double lo = 0, hi = 0;
    for (double s : speed) hi = std::max(hi, segment_ms(m, g.name, g.units, s));
    for (int i = 0; i < 200; ++i) {
      const double mid = 0.5 * (lo + hi);
      (units_by(mid) < static_cast<double>(g.units) ? lo : hi) = mid;
    }
    total += hi;
  }
  return total;
}

Partition best_split(const TrueMachine& m, const std::vector<double>& speed) {
  const int n = static_cast<int>(speed.size());
  Partition p = Partition::even(m.model.groups, n);
  for (const UnitGroup& g : m.model.groups) {
    // Units rank r can finish within t ms (its segment grows with every unit).
    auto fit = [&](int r, double t) {
      int64_t k = 0;
      while (k < g.units && segment_ms(m, g.name, k + 1, speed[r]) <= t) ++k;
      return k;
    };
    // The segment's end is one of the ranks' times for some count of units: the least that fits
    // all (below a rank's replicated share, the share is the end).
    std::vector<double> ends;
    for (int r = 0; r < n; ++r)
      for (int64_t k = 0; k <= g.units; ++k) ends.push_back(segment_ms(m, g.name, k, speed[r]));
    std::sort(ends.begin(), ends.end());
    std::vector<int64_t> count(n);
    for (double t : ends) {
      int64_t total = 0;
      for (int r = 0; r < n; ++r) total += count[r] = fit(r, t);
      if (total >= g.units) break;
    }
    // Surplus units leave the ranks whose segments end last (any would leave the step as it is;
    // these leave the most slack).
    int64_t surplus = -g.units;
    for (int64_t c : count) surplus += c;
    for (; surplus > 0; --surplus) {
      int late = -1;
      for (int r = 0; r < n; ++r)
        if (count[r] > 0 && (late < 0 || segment_ms(m, g.name, count[r], speed[r]) >
                                             segment_ms(m, g.name, count[late], speed[late])))
          late = r;
      --count[late];
    }
    std::vector<int> owners;
    for (int r = 0; r < n; ++r) owners.insert(owners.end(), count[r], r);
    p.set_owners(g.name, owners);
  }
  return p;
}

std::vector<std::vector<double>> weight_grid(const std::vector<double>& levels, int ranks) {
  FLEXTP_CHECK(!levels.empty() && ranks >= 1, "weight_grid: no levels or no ranks");
  for (double l : levels) FLEXTP_CHECK(l > 0 && std::isfinite(l), "weight_grid: level ", l, " is not positive");
  std::vector<std::vector<double>> out;
  std::set<std::vector<int64_t>> seen;  // the ratios met, to a millionth
  std::vector<size_t> at(ranks, 0);        // an odometer over the levels
  while (true) {
    std::vector<double> w;
    for (size_t i : at) w.push_back(levels[i]);
    const double least = *std::min_element(w.begin(), w.end());
    std::vector<int64_t> ratio;
    for (double x : w) ratio.push_back(std::llround(x / least * 1e6));
    if (seen.insert(ratio).second) {
      for (double& x : w) x /= least;
      out.push_back(w);
    }
    int r = ranks - 1;
    while (r >= 0 && ++at[r] == levels.size()) at[r--] = 0;
    if (r < 0) return out;
  }
}

std::vector<StaticSplit> static_splits(const TrueMachine& m, const std::vector<double>& speed,
                                       const std::vector<double>& levels) {
  std::vector<StaticSplit> out;
  std::set<std::string> seen;
  for (const std::vector<double>& w : weight_grid(levels, static_cast<int>(speed.size()))) {
    Partition p = Partition::proportional(m.model.groups, w);
    const std::string key = p.str();
    if (!seen.insert(key).second) continue;
    const double ms = true_step(m, units_run(p), speed).step_ms;
    out.push_back({w, std::move(p), ms});
  }
  std::stable_sort(out.begin(), out.end(), [](const StaticSplit& a, const StaticSplit& b) { return a.step_ms < b.step_ms; });
  return out;
}

}  // namespace flextp

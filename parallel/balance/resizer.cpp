#include "parallel/balance/resizer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/elementwise.h"
#include "core/ops/reduce.h"
#include "core/ops/shape_ops.h"
#include "core/random.h"
#include "parallel/balance/active_units.h"
#include "parallel/tp/unit_rows.h"

namespace flextp {

int64_t Resizer::keep_count(const std::vector<int>& owners, const std::vector<double>& speed, int rank) const {
  // The time the fastest-finishing rank needs for its whole share of this group.
  std::vector<double> count(speed.size(), 0.0);
  for (int o : owners) count[o] += 1;
  double target = 1e300;
  for (size_t r = 0; r < speed.size(); ++r)
    if (count[r] > 0) target = std::min(target, count[r] / speed[r]);
  int64_t n = static_cast<int64_t>(count[rank]);
  // A dead band: a rank that would finish within the tolerance keeps everything, so that the
  // noise of a shared machine does not drop work; one beyond it shrinks to the target itself.
  if (n == 0 || count[rank] / speed[rank] <= target * (1 + o_.tolerance)) return n;
  return std::min<int64_t>(n, static_cast<int64_t>(std::floor(target * speed[rank] + 1e-9)));
}

double Resizer::skipped_importance(const std::vector<Parameter*>& params, const Partition& partition,
                                   const std::vector<double>& speed, int rank) const {
  double skipped = 0, total = 0;
  for (const auto& [group, owners] : partition.groups()) {
    std::vector<Parameter*> ps = group_parameters(params, group);
    if (ps.empty() || !ps.front()->group().resizable) continue;
    std::vector<double> imp;
    for (int64_t u : ps.front()->units) imp.push_back(importance(group, u));
    std::sort(imp.begin(), imp.end(), std::greater<double>());
    int64_t keep = keep_count(owners, speed, rank);
    for (size_t i = 0; i < imp.size(); ++i) {
      total += imp[i];
      if (static_cast<int64_t>(i) >= keep) skipped += imp[i];
    }
  }
  return total > 0 ? skipped / total : 0.0;
}

Resizer::Resizer(ResizeOptions o) : o_(std::move(o)) {
  FLEXTP_CHECK(o_.priority == "taylor" || o_.priority == "norm" || o_.priority == "random", "resizing priority '",
               o_.priority, "' is not one of taylor, norm, random");
}

void Resizer::observe(const std::vector<Parameter*>& params, int64_t step) {
  NoGradGuard ng;
  std::map<std::string, std::map<int64_t, double>> now;
  for (Parameter* p : params) {
    if (p->replicated() || !p->group().resizable) continue;
    Tensor g = p->grad();
    std::vector<int64_t> offsets = local_unit_offsets(*p);
    int64_t active = p->active_units();
    for (int64_t i = 0; i < active; ++i) {
      int64_t u = p->units[i], rows = p->rows_of_unit(u);
      Tensor w = slice_rows(p->value, offsets[i], rows);
      double s = 0;
      if (o_.priority == "taylor") {
        if (!g.defined()) continue;
        Tensor wg = mul(w, slice_rows(g, offsets[i], rows));
        s = sum_squares(wg).item();  // squared, then rooted: |w * g| as an L2 over the unit
        s = std::sqrt(s);
      } else if (o_.priority == "norm") {
        s = sum_squares(w).item();
      } else {
        s = rng::uniform(static_cast<uint64_t>(step), rng::stream_id(p->group().name.c_str()) + u, o_.seed);
      }
      now[p->group().name][u] += s;
    }
  }
  for (const auto& [group, units] : now)
    for (const auto& [u, s] : units) {
      auto it = score_[group].find(u);
      if (it == score_[group].end())
        score_[group][u] = s;
      else
        it->second = o_.smoothing * it->second + (1 - o_.smoothing) * s;
    }
}

double Resizer::importance(const std::string& group, int64_t unit) const {
  auto g = score_.find(group);
  if (g == score_.end()) return 0.0;
  auto u = g->second.find(unit);
  return u == g->second.end() ? 0.0 : u->second;
}

void Resizer::keep_most_important(const std::vector<Parameter*>& ps, const std::string& group, int64_t keep) const {
  const std::vector<int64_t>& units = ps.front()->units;
  int64_t n = static_cast<int64_t>(units.size());
  if (keep >= n) {
    set_active_units(ps, -1);
    return;
  }
  std::vector<int64_t> order = units;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return importance(group, a) > importance(group, b); });
  std::set<int64_t> want(order.begin(), order.begin() + keep);
  // Keep the current order of the units that stay, so that nothing moves needlessly.
  std::vector<int64_t> next;
  for (int64_t u : units)
    if (want.count(u)) next.push_back(u);
  for (int64_t u : units)
    if (!want.count(u)) next.push_back(u);
  if (next != units) reorder_units(ps, next);
  set_active_units(ps, keep);
}

std::map<std::string, int64_t> Resizer::resize(const std::vector<Parameter*>& params,
                                               const std::map<std::string, int64_t>& keep) const {
  std::map<std::string, std::vector<Parameter*>> groups;
  for (Parameter* p : params)
    if (!p->replicated()) groups[p->group().name].push_back(p);
  std::map<std::string, int64_t> skipped;
  for (const auto& [group, ps] : groups) {
    const int64_t n = static_cast<int64_t>(ps.front()->units.size());
    auto wanted = keep.find(group);
    if (wanted == keep.end() || !ps.front()->group().resizable) {
      set_active_units(ps, -1);
      continue;
    }
    keep_most_important(ps, group, std::clamp<int64_t>(wanted->second, 0, n));
    if (wanted->second < n) skipped[group] = n - std::max<int64_t>(wanted->second, 0);
  }
  return skipped;
}

}  // namespace flextp

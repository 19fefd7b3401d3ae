#include "train/initial_partition.h"

#include <string>
#include <vector>

#include "nn/units.h"
#include "train/flags.h"

namespace flextp {

Partition initial_partition(const ParallelOptions& o, const GPTConfig& c, const Grid& grid) {
  try {
    std::vector<UnitGroup> groups = unit_groups(c);
    Partition p = o.tp_weights.empty()
                      ? Partition::even(groups, grid.tp)
                      : Partition::proportional(
                            groups, with_flag("--tp-weights", [&] { return parse_tp_weights(o.tp_weights, grid.tp); }));
    for (const std::string& spec : o.tp_assign) with_flag("--tp-assign", [&] { apply_tp_assignment(p, groups, spec); });
    return p;
  } catch (const Error& e) {
    if (grid.dp == 1) throw;
    throw Error(std::string(e.what()) + " (--tp " + std::to_string(grid.tp) + ": --tp-weights and --tp-assign name the " +
                std::to_string(grid.tp) + " ranks of one tensor-parallel group, the same in each of the " +
                std::to_string(grid.dp) + " replicas)");
  }
}

namespace {

// "ranks 4-7", "rank 3", "ranks 1, 3".
std::string rank_list(const std::vector<int>& ranks) {
  const bool run = ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  if (run && ranks.size() > 2) return out + std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

}  // namespace

std::string unowned_kinds_note(const GPTConfig& c, const Partition& p) {
  const std::vector<UnitGroup> groups = unit_groups(c);
  std::string note;
  for (UnitKind kind : kUnitKinds) {
    int64_t per_group = 0;  // units of one group of this kind (a layer's heads, MLP blocks; the vocabulary's)
    for (const UnitGroup& g : groups)
      if (g.kind == kind) per_group = g.units;
    if (per_group == 0) continue;
    std::vector<int> idle;
    for (int r = 0; r < p.ranks(); ++r)
      if (units_per_kind(groups, p, r).held.at(kind) == 0) idle.push_back(r);
    if (idle.empty()) continue;
    const char* what = kind == UnitKind::Head ? "attention head" : kind == UnitKind::Mlp ? "MLP block" : "vocabulary block";
    const std::string per = kind == UnitKind::Vocab ? " in all" : " per layer";
    const std::string fix = kind == UnitKind::Head  ? "--n-head " + std::to_string(p.ranks()) + " (or a multiple)"
                            : kind == UnitKind::Mlp ? "a smaller --mlp-unit"
                                                    : "a smaller --vocab-unit";
    note += "note: " + rank_list(idle) + " of " + std::to_string(p.ranks()) + (idle.size() == 1 ? " owns no " : " own no ") + what + " (" +
            std::to_string(per_group) + per + " over " + std::to_string(p.ranks()) +
            " tensor ranks): they wait while the others compute them. For a share each: " + fix + ", or at most " +
            std::to_string(per_group) + " tensor ranks (--tp)\n";
  }
  return note;
}

}  // namespace flextp

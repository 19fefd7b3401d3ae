#include "train/initial_partition.h"

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

}  // namespace flextp

#include "train/process_groups.h"

#include "train/flags.h"

namespace flextp {

ProcessGroups make_process_groups(const TrainOptions& o, Communicator& world, const SplitWorld& split) {
  ProcessGroups g;
  g.grid = with_flag("--tp", [&] { return Grid::of(world.size(), world.rank(), static_cast<int>(o.parallel.tp)); });
  if (g.grid.dp > 1) {
    g.tp = split(g.grid.dp_rank);  // in placed order (mpi_place_ranks): tensor rank tp_rank
    g.dp = split(g.grid.tp_rank);  // in placed order: replica dp_rank
  }
  g.share = with_flag("--batch", [&] { return g.grid.windows(o.data.batch).second; });
  g.micro_windows = g.share / with_flag("--micro-batch", [&] { return micro_steps(g.share, o.parallel.micro_batch); });
  return g;
}

}  // namespace flextp

#pragma once
// This rank's place in the grid of replicas of tp consecutive ranks (--tp), its communicators,
// and its replica's windows of a step. One replica (the default) uses the world as it is.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parallel/comm/communicator.h"
#include "parallel/dp/grid.h"
#include "train/options.h"

namespace flextp {

// A communicator over the world's ranks of `color`, on the world's backend.
using SplitWorld = std::function<std::unique_ptr<Communicator>(int color)>;

struct ProcessGroups {
  Grid grid;
  std::unique_ptr<Communicator> tp, dp;  // several replicas: this rank's tensor- and data-parallel groups
  int64_t share = 0;                     // this replica's windows of a step (at the start: an even split)
  int64_t micro_windows = 0;             // windows per forward/backward
  std::vector<std::string> hosts;        // each rank's host, in placed order (mpi_place_ranks); empty: one process

  Communicator& tensor_parallel(Communicator& world) const { return tp ? *tp : world; }
};

ProcessGroups make_process_groups(const TrainOptions& o, Communicator& world, const SplitWorld& split);

}  // namespace flextp

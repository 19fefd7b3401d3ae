#pragma once
// The units each rank of a tensor-parallel group starts with: an even split, or the one
// --tp-weights and --tp-assign give (the same in every replica).
#include "nn/config.h"
#include "parallel/dp/grid.h"
#include "parallel/tp/partition.h"
#include "train/options.h"

namespace flextp {

Partition initial_partition(const ParallelOptions& o, const GPTConfig& c, const Grid& grid);

}  // namespace flextp

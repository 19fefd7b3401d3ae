#pragma once
// The units each rank of a tensor-parallel group starts with: an even split, or the one
// --tp-weights and --tp-assign give (the same in every replica).
#include "nn/config.h"
#include "parallel/dp/grid.h"
#include "parallel/tp/partition.h"
#include "train/options.h"

namespace flextp {

Partition initial_partition(const ParallelOptions& o, const GPTConfig& c, const Grid& grid);

// A line for the log when some rank owns no unit of a kind (more tensor ranks than a layer's
// heads, say): which ranks, and what gives every rank some. Empty when every rank owns some of
// every kind. Such a rank still runs (it waits for the others' share of that kind).
std::string unowned_kinds_note(const GPTConfig& c, const Partition& p);

}  // namespace flextp

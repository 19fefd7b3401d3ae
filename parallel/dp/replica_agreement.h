#pragma once
// What keeps the replicas of a data x tensor parallel run one model. Each replica balances its own
// tensor-parallel group (its own partition, its own skipped units), and the data-parallel sum
// (parallel/dp/gradient_sync.h) gives every replica the same gradient of every unit, so every
// replica applies the same update to every unit. check_replica_weights verifies that cheaply
// (one hash per unit and replica), so that a divergence stops the run with a clear error instead
// of training replicas that drift apart.
#include <vector>

#include "core/parameter.h"
#include "parallel/comm/communicator.h"
#include "parallel/dp/grid.h"

namespace flextp {

// Collective over the world's ranks (in world-rank order, `grid` this rank's place): throws on
// every rank unless each unit's weights and optimizer state are bitwise the same in every
// replica (wherever each replica keeps the unit), and each replicated parameter's on every rank
// (every tensor rank of every replica keeps a copy), naming the first that differ.
void check_replica_weights(Communicator& world, const Grid& grid, const std::vector<Parameter*>& params);

}  // namespace flextp

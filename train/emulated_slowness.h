#pragma once
// The testing harness's slow ranks: emulated stragglers (--straggler, --straggler-trace), which
// the step clock applies, and real contention (--contend), busy threads beside a rank.
#include <memory>

#include "core/dtype.h"
#include "parallel/balance/slowdown.h"
#include "parallel/comm/communicator.h"
#include "parallel/dp/grid.h"
#include "train/options.h"

namespace flextp {

// Both flags name ranks of the world (a trace has a column per world rank); this rank's step
// clock, which counts ranks in its tensor-parallel group, gets its group's ranks, numbered from 0.
SlowdownSchedule slowdown(const HarnessOptions& o, const Grid& grid);

// Busy threads beside this rank where --contend names it; on a GPU, busy kernels on its GPU.
// Null where it names other ranks only.
std::unique_ptr<Contention> contention(const HarnessOptions& o, const Communicator& world, Device device);

}  // namespace flextp

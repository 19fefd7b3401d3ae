#pragma once
// The data-parallel gradient sum (parallel/dp/gradient_sync.h) adds tensor-parallel slot r's
// rows of every replica together, which is right only while every replica holds the same
// partition and skips the same units. The balancer keeps it so (every replica takes the same
// decision from the same table, trainer.cpp); this check, after each balancing step, stops the
// run with a clear error rather than let a divergence sum one unit's gradient into another's.
#include <string>
#include <vector>

#include "core/parameter.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/cost_model.h"
#include "parallel/tp/partition.h"

namespace flextp {

// Every replica calibrates its own group's communication; the balancers must decide alike, so
// all take replica 0's fits and choices.
void share_comm_model(Communicator& dp, CommCostModel& model);

// Throws unless every rank of `dp` holds the same partition and the same active rows.
void check_replicas_agree(Communicator& dp, const Partition& partition, const std::vector<Parameter*>& params);

}  // namespace flextp

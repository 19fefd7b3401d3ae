#pragma once
// The balancer of this rank's tensor-parallel group, and the communication model it prices
// moves with: the primitives timed on this group at this model's sizes, the cheapest of each
// picked (--comm forces one), the same in every replica.
#include <memory>

#include "core/dtype.h"
#include "nn/config.h"
#include "parallel/balance/balancer.h"
#include "parallel/balance/step_clock.h"
#include "train/log.h"
#include "train/options.h"
#include "train/process_groups.h"

namespace flextp {

// Sets the clock's reduction to the model's choice; the log shows the fitted model.
// `optimizer_slots`: the tensors of optimizer state per weight (they move with a unit).
std::unique_ptr<Balancer> make_balancer(StepClock& clock, const ProcessGroups& groups, const TrainOptions& o,
                                        const GPTConfig& c, const Partition& partition, Device device,
                                        int optimizer_slots, TrainLog& log);

}  // namespace flextp

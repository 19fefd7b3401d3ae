#pragma once
// What one unit of each group costs per training step (FLOPs of its forward and backward, with
// memory-bound elementwise passes weighted as FLOP-equivalents) and how many bytes it carries when
// it moves (weights and optimizer slots): the planner's inputs from the model.
#include "nn/config.h"
#include "parallel/planner.h"

namespace flextp {

UnitCosts gpt_unit_costs(const GPTConfig& c, int64_t batch, int64_t seq_len, int slots);

}  // namespace flextp

#pragma once
// What one unit of each group costs per training step (FLOPs of its forward and backward, with
// memory-bound elementwise passes weighted as FLOP-equivalents) and how many bytes it carries when
// it moves (weights and optimizer slots): the planner's inputs from the model.
#include "core/dtype.h"
#include "core/unit_layout.h"
#include "nn/config.h"
#include "parallel/balance/planner.h"

namespace flextp {

// A memory-bound elementwise pass over one element, in FLOP-equivalents: measured on the CPU
// (a rank holding no units spends ~7% of a full step on the replicated LayerNorms and adds).
inline constexpr double kElementwiseFlops = 40.0;

// The bytes one value of a parameter carries when it moves: itself and its optimizer slots.
inline double bytes_per_value(const GPTConfig& c, const StepShape& s) {
  return static_cast<double>(dtype_size(c.dtype)) * (1 + s.optimizer_slots);
}

// The model as the planner prices it: the unit registry's groups, each priced by the layer that
// owns it for steps of this shape, and the replicated work every rank does.
ModelCosts gpt_model_costs(const GPTConfig& c, const StepShape& s);

}  // namespace flextp

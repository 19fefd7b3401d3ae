#pragma once
// The model and its optimizer as the flags set them: the device and numerics, which parameters
// decay; AdamW or SGD.
#include <memory>

#include "core/dtype.h"
#include "nn/gpt.h"
#include "optim/optimizer.h"
#include "train/options.h"

namespace flextp {

// Moves the model (initialised on the host: the same numbers on every device) to `device`.
void apply_model_settings(GPT& model, const TrainOptions& o, Device device);

std::unique_ptr<Optimizer> make_optimizer(const OptimizationOptions& o);

}  // namespace flextp

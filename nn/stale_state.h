#pragma once
// Stale imputation's running means (nn/linear.h) in a checkpoint's state file. They are training
// state like the optimizer slots: a resumed run must impute what the uninterrupted one would. Per
// row-split layer they travel as "<layer>.stale_mean" [units, out] (logical unit order) and
// "<layer>.stale_seen" [units] (1 where the unit has a mean, 0 where it has none yet); a layer
// none of whose units has a mean is left out, so runs without stale imputation write nothing.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/safetensors.h"
#include "nn/gpt.h"

namespace flextp {

// Appends (on the writer) every layer's logical means and seen flags. Every rank takes part.
void gather_stale_means(const GPT& model, Communicator* comm, bool writer,
                        std::vector<std::pair<std::string, Tensor>>& out);

// Adds the shapes of the means a state file holds to `expected` (the file may hold none).
void expect_stale_means(const GPT& model, const SafetensorsFile& state, std::map<std::string, Shape>& expected);

// Gives every layer its units' means from the state file; none where the file has none (a
// checkpoint from before the means were saved, or of zero imputation: training rebuilds them).
void load_stale_means(GPT& model, const SafetensorsFile& state);

}  // namespace flextp

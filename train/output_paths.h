#pragma once
// Where a run writes, checked before it trains (a run must not learn at its end that it cannot
// keep what it did). A run that trains without --save keeps its checkpoint all the same, in a
// directory of its own: runs/NAME/model.safetensors, NAME from --name (a name, never a path) or
// the start time. Every output makes the directories it needs where they are missing (--save,
// --metrics, --export-hf, the run directory; core/temp_files.h make_directories), when it first
// writes, and a path under a regular file is refused.
#include <string>

#include "train/options.h"

namespace flextp {

// Sets --save to the default checkpoint where the run saves without --save (it trains and
// --no-save is not given), and on the rank that writes files (`lead`) checks that --save (or the
// run directory) and --export-hf can be written. Returns the line that says where the default
// checkpoint goes ("" where there is none).
std::string prepare_output_paths(TrainOptions& o, bool lead);

}  // namespace flextp

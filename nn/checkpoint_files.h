#pragma once
// The periodic checkpoints of a run (--save-every) sit beside the final one, named by step:
// runs/m.safetensors -> runs/m-step000500.safetensors (six digits at least, more past 999,999).
#include <cstdint>
#include <string>
#include <vector>

namespace flextp {

std::string periodic_checkpoint_path(const std::string& path, int64_t step);

// The periodic checkpoints of `path` that exist, oldest first (ordered by step, not by name).
std::vector<std::string> periodic_checkpoints(const std::string& path);

// --keep-last: removes all but the newest `keep` periodic checkpoints of `path` and their
// optimizer state.
void remove_old_checkpoints(const std::string& path, int64_t keep);

}  // namespace flextp

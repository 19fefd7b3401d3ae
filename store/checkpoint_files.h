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

// --keep-last, after the periodic checkpoint of `step` was written: removes all but the newest
// `keep` periodic checkpoints of `path` that belong to run `run_id` and are not past `step`, and
// their optimizer state. Another run's files in the same directory, and later steps of this run
// (an earlier attempt that a resume from an older step goes back behind), are never removed.
void remove_old_checkpoints(const std::string& path, int64_t keep, const std::string& run_id, int64_t step);

// Removes the temporary files that saves killed mid-write left for `path`, its periodic
// checkpoints and their optimizer state (NAME.tmp.<pid>[.<suffix>] of a process that no longer
// exists; core/temp_files.h): the next save cleans up after the killed ones, whichever file
// they were writing. Returns how many it removed.
int remove_stale_checkpoint_temporaries(const std::string& path);

// Before training, so that a run is never lost at its end: refuses (naming `flag`) a checkpoint
// path that is a directory, or whose directory cannot be written to or, where it is missing, be
// made (the save makes it: core/temp_files.h make_directories).
void check_checkpoint_path(const std::string& path, const std::string& flag);
// The same for an export directory: one that exists and can be written to, or can be created.
void check_export_dir(const std::string& dir, const std::string& flag);

}  // namespace flextp

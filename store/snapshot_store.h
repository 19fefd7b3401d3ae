#pragma once
// The snapshots a directory holds on one host (--snapshot-dir; train/snapshots.h takes and
// restores them): their names, which files of theirs read whole, and which snapshot is the newest
// complete one. Files only, no communication.
//
// In the directory: step000020-1a2b3c4d/replica0of2-rank1of2.shard (a shard of the run attempt
// 1a2b3c4d: store/snapshot_shard.h; a host holds its own ranks' and the previous host's) and
// step000020-1a2b3c4d/whole.st (+ .state), the checkpoint a recovery assembled, itself a complete
// snapshot. No other name is taken for a snapshot. Beside them: "lock", which the run using the
// directory holds, and "run", the id of the run whose snapshots they are.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/snapshot_shard.h"

namespace flextp {

// "step000020-1a2b3c4d": the snapshot of `step` taken by the run attempt `attempt` (8 hex digits).
std::string snapshot_name(int64_t step, const std::string& attempt);
// "replica0of2-rank1of2.shard": the file of the shard from `place`.
std::string shard_name(const ShardPlace& place);
// "step000020-1a2b3c4d/whole.st": the checkpoint assembled from snapshot `name`'s shards (its state
// beside it, + ".state"), relative to the directory.
std::string whole_checkpoint_file(const std::string& name);

// The files of snapshots that one host holds and that read whole and pass their checks, relative to
// `dir`. Not listed: a temporary file, a checkpoint without its state, a shard that does not parse
// or whose bytes do not match its checksum, and a file of another run than the directory's
// (snapshot_run); each of the last ones in `rejected`, if given, with why ("FILE: REASON").
std::vector<std::string> snapshot_files(const std::string& dir, std::vector<std::string>* rejected = nullptr);

// Holds `dir` for this process until it ends: two runs must not write their snapshots into one
// directory. The lock is the kernel's (flock), so a run that crashed holds nothing; throws naming
// the live holder. Taken again by the same process, it is already held.
void hold_snapshot_directory(const std::string& dir);

// The run whose snapshots `dir` holds ("" where none was recorded), and recording it.
std::string snapshot_run(const std::string& dir);
void set_snapshot_run(const std::string& dir, const std::string& run_id);

struct SnapshotChoice {
  std::string name;                // "step000020-1a2b3c4d"
  int64_t step = 0;
  std::vector<std::string> files;  // relative to the directory: the shards in rank order, or the whole checkpoint
  bool whole = false;
};
// The newest snapshot all of whose files some holder has (`held[h]`: holder h's snapshot_files):
// the shards of every tensor-parallel rank of one replica, or an assembled checkpoint. None when
// there is none.
std::optional<SnapshotChoice> newest_complete_snapshot(const std::vector<std::vector<std::string>>& held);

// Removes the snapshots in `dir` of steps before `step` (only directories named as snapshots).
void remove_snapshots_before(const std::string& dir, int64_t step);

}  // namespace flextp

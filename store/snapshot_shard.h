#pragma once
// A snapshot's shard: one rank's rows of every parameter and of its optimizer slots, in flextp's
// own layout, with the units it holds named in the metadata. Each rank writes its own, with no
// communication (train/snapshots.h); the shards of all ranks of one snapshot assemble into an
// ordinary checkpoint (store/checkpoint.h), which a run on any grid resumes from.
#include <string>
#include <vector>

#include "store/checkpoint.h"

namespace flextp {

// Where a shard comes from: tensor-parallel rank `rank` of `ranks` in replica `replica` of
// `replicas` (data parallelism; a replica's shards hold every unit once).
struct ShardPlace {
  int rank = 0, ranks = 1, replica = 0, replicas = 1;
  bool operator==(const ShardPlace& o) const {
    return rank == o.rank && ranks == o.ranks && replica == o.replica && replicas == o.replicas;
  }
};

// This rank's shard as the bytes of a safetensors file, after state.step steps.
std::string shard_bytes(GPT& model, const Optimizer& optimizer, const TrainState& state, const ShardPlace& place);

struct ShardInfo {
  int64_t step = 0;
  ShardPlace place;
  std::string run_id;
};
// Reads the whole file (a shard cut short does not parse), checks it against the checksum of its
// bytes that it carries, and returns what it holds; throws naming the problem.
ShardInfo read_shard_info(const std::string& path);

// Writes the checkpoint `path` (and path.state) of one snapshot's shards, `shards[r]` being rank
// r's: every unit of every parameter must come from exactly one of them. `optimizer` is a fresh one
// of the run's kind (its name must be the shards'). Returns the snapshot's training state.
TrainState assemble_checkpoint(const std::vector<std::string>& shards, Optimizer& optimizer, const std::string& path);

}  // namespace flextp

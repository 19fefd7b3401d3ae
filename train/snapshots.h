#pragma once
// Snapshots for recovery after losing a host (--snapshot-dir, --snapshot-every). Every K steps
// each rank of replica 0 (the others hold the same values) gathers its shard (store/snapshot_shard.h)
// and goes on: threads write it into its host's own directory, and a copy travels to a rank on the
// next host, which keeps it in its own, while the next steps compute. The next snapshot first
// waits for both, so that losing one host (its processes and its directory) loses at most K steps
// and the copy's time. A run with --resume-snapshot (scripts/launch --restarts adds it) lists what the
// hosts it runs on hold, takes the newest snapshot whose files are all there, assembles it into an
// ordinary checkpoint on rank 0's host, copies that to every host and resumes from it as --load
// would: the same curve (step, data position, seed, schedule).
// The names and the choice of snapshots on disk: store/snapshot_store.h. With data parallelism
// replica 0's shards make a snapshot (the other replicas write none): it is lost only where both a
// shard's host and the host of its copy are lost.
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "optim/optimizer.h"
#include "parallel/comm/byte_mail.h"
#include "parallel/dp/grid.h"
#include "store/snapshot_shard.h"
#include "train/log.h"
#include "train/options.h"

namespace flextp {

// Before training, on every rank (a collective over `mail`; null: one process). Without `resume`,
// refuses a directory that holds snapshots on any host (another run's, or this one's to resume).
// With it, restores the newest complete snapshot as above and returns the checkpoint to --load on
// this host, in place of --load or --init-from-hf ("" when there is none: the run starts as the
// command says); `said` gets the log's line.
std::string prepare_snapshots(const CheckpointOptions& o, Optimizer& fresh, ByteMail* mail,
                              const std::vector<std::string>& hosts, std::string& said);

class Snapshots {
 public:
  // `state`: the run's identity and metadata (its step is set at each snapshot); `mail` null: one
  // process, no copy.
  Snapshots(const CheckpointOptions& o, GPT& model, const Optimizer& opt, TrainState state, ByteMail* mail,
            const std::vector<std::string>& hosts, const Grid& grid, TrainLog& log, int64_t start);
  ~Snapshots();
  // After each step: takes a snapshot every K steps (not after the last), else moves the copies on.
  void after_step(int64_t step, bool last);
  // Waits for the copies still travelling.
  void finish();
  // Says so when no step of this run before its last, `steps`, is a snapshot's (--snapshot-every
  // past the steps left): recovery after losing a host is off.
  void say_if_none_before(int64_t steps) const;

 private:
  void take(int64_t step);
  void keep_letters(std::vector<ByteMail::Letter> letters);
  // Files are written by threads of their own while the steps go on (no MPI in them).
  void write_later(const std::string& path, std::shared_ptr<const std::string> bytes);
  // Waits for them; false (and the log says why) when one failed: a full or read-only disk costs
  // the snapshot, never the run or its --save.
  bool wait_writes();
  // Whether every rank wrote all of the snapshot under way (a collective; one process: its own).
  bool all_written(bool mine);

  const CheckpointOptions& o_;
  GPT& model_;
  const Optimizer& opt_;
  TrainState state_;
  ByteMail* mail_;
  TrainLog& log_;
  ShardPlace place_;
  int partner_ = -1;
  int64_t every_;
  std::vector<int> senders_;  // the ranks whose partner this rank is
  bool host_lead_ = true;     // the first rank of its host: it prunes the host's directory
  std::string attempt_, current_;
  int64_t kept_from_ = 0;     // the last complete snapshot's step: earlier ones are pruned
  int64_t writing_ = -1;      // the step of the snapshot under way
  bool off_ = false;          // the last snapshot failed: recovery is off until one is written
  std::vector<std::future<void>> writes_;
};

}  // namespace flextp

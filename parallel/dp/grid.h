#pragma once
// The process grid of a data x tensor parallel run: the world's ranks form `dp` replicas of the
// model, each a tensor-parallel group of `tp` consecutive ranks (so that under the usual mpirun
// mapping a group sits on one node, where tensor parallelism's many all-reduces are cheap, and
// only the data-parallel gradient sum crosses nodes). World rank w is tensor-parallel rank
// w % tp of replica w / tp; the data-parallel group of a tensor-parallel slot holds the ranks
// with the same w % tp, one per replica.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace flextp {

struct Grid {
  int tp = 1, dp = 1;            // ranks per tensor-parallel group; replicas
  int tp_rank = 0, dp_rank = 0;  // this rank's place: its slot in its group, its replica
  // The grid of `world` ranks in groups of `tp` (0: one group of all ranks), seen from world rank
  // `rank`. An error names the problem when tp does not divide the world.
  static Grid of(int world, int rank, int tp);
  int world() const { return tp * dp; }
  int world_rank() const { return dp_rank * tp + tp_rank; }
  // The world rank of tensor-parallel rank `slot` of replica `replica`.
  int world_rank_of(int replica, int slot) const { return replica * tp + slot; }
  // "2 tensor x 2 data (tensor rank 1, replica 0)"
  std::string str() const;
  // The windows of a step that this replica computes, [first, first + count), from the windows
  // each replica computes (parallel/dp/window_shares.h): replica d takes the shares[d] windows
  // after those of replicas < d, so the step's windows are the same whatever the shares. With
  // `batch` alone, even shares (even_shares: batch must divide by dp).
  std::pair<int64_t, int64_t> windows(int64_t batch) const;
  std::pair<int64_t, int64_t> windows(const std::vector<int64_t>& shares) const;
};

// Micro-steps of `micro` windows (0: the whole share at once) for a share of `share` windows: an
// error names the problem when micro does not divide the share.
int64_t micro_steps(int64_t share, int64_t micro);

}  // namespace flextp

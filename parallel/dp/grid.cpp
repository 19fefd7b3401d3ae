#include "parallel/dp/grid.h"

#include "core/error.h"
#include "parallel/dp/window_shares.h"

namespace flextp {

Grid Grid::of(int world, int rank, int tp) {
  FLEXTP_CHECK(world > 0 && rank >= 0 && rank < world, "rank ", rank, " is not one of ", world, " ranks");
  FLEXTP_CHECK(tp >= 0, "a tensor-parallel group of ", tp, " ranks: it must be positive (0: all ranks)");
  if (tp == 0) tp = world;
  FLEXTP_CHECK(tp <= world, "a tensor-parallel group of ", tp, " ranks needs at least ", tp, " ranks; this run has ",
               world);
  FLEXTP_CHECK(world % tp == 0, "a tensor-parallel group of ", tp, " ranks does not divide the ", world,
               " ranks of this run into replicas: use a divisor of ", world);
  Grid g;
  g.tp = tp, g.dp = world / tp, g.tp_rank = rank % tp, g.dp_rank = rank / tp;
  return g;
}

std::string Grid::str() const {
  return std::to_string(tp) + " tensor x " + std::to_string(dp) + " data (tensor rank " + std::to_string(tp_rank) +
         ", replica " + std::to_string(dp_rank) + ")";
}

std::pair<int64_t, int64_t> Grid::windows(int64_t batch) const { return windows(even_shares(batch, dp, 0)); }

std::pair<int64_t, int64_t> Grid::windows(const std::vector<int64_t>& shares) const {
  FLEXTP_CHECK(static_cast<int>(shares.size()) == dp, shares.size(), " window shares for ", dp, " replicas");
  int64_t first = 0;
  for (int d = 0; d < dp_rank; ++d) first += shares[d];
  FLEXTP_CHECK(shares[dp_rank] > 0, "replica ", dp_rank, " has a share of ", shares[dp_rank], " windows");
  return {first, shares[dp_rank]};
}

int64_t micro_steps(int64_t share, int64_t micro) {
  FLEXTP_CHECK(micro >= 0, "a micro-batch of ", micro, " windows: it must be positive (0: the whole share)");
  if (micro == 0) return 1;
  FLEXTP_CHECK(micro <= share && share % micro == 0, "a micro-batch of ", micro,
               " windows does not divide this replica's share of ", share, " windows of each step: use a divisor of ",
               share);
  return share / micro;
}

}  // namespace flextp

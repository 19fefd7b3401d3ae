#include "parallel/dp/replica_partitions.h"

#include "core/error.h"

namespace flextp {

ReplicaPartitions::ReplicaPartitions(const Grid& grid, const Partition& initial)
    : grid_(grid), replicas_(grid.dp, initial) {
  FLEXTP_CHECK(initial.ranks() == grid.tp, "a partition of ", initial.ranks(), " ranks for tensor-parallel groups of ",
               grid.tp);
  classify();
}

void ReplicaPartitions::exchange(Communicator& world, const Partition& mine) {
  FLEXTP_CHECK(world.size() == grid_.world() && world.rank() == grid_.world_rank(), "the replicas' partitions travel over the world's ",
               grid_.world(), " ranks, not a communicator of ", world.size());
  FLEXTP_CHECK(mine.ranks() == grid_.tp && mine.groups().size() == of(0).groups().size(),
               "this replica's partition does not cover the model's unit groups");
  int64_t units = 0;
  for (const auto& [group, owners] : of(0).groups()) units += static_cast<int64_t>(owners.size());
  // Slot + 1 of each unit in each replica's block, written by the replica's tensor rank 0 alone:
  // the sum over the world is every replica's owner list (0 would mean nobody wrote it).
  Tensor t = Tensor::zeros({grid_.dp * units}, DType::I32);
  int32_t* slot = t.data<int32_t>();
  if (grid_.tp_rank == 0) {
    int64_t at = grid_.dp_rank * units;
    for (const auto& [group, ignored] : of(0).groups())
      for (int o : mine.owners(group)) slot[at++] = o + 1;
  }
  world.all_reduce(t, ReduceOp::Sum);
  for (int d = 0; d < grid_.dp; ++d) {
    int64_t at = d * units;
    for (const auto& [group, old] : of(0).groups()) {
      std::vector<int> owners(old.size());
      for (int& o : owners) {
        o = slot[at++] - 1;
        FLEXTP_CHECK(o >= 0 && o < grid_.tp, "replica ", d, "'s owner list came back broken (slot ", o, ")");
      }
      replicas_[d].set_owners(group, owners);
    }
  }
  classify();
}

void ReplicaPartitions::classify() {
  differing_ = 0;
  int next_root = 0;
  for (const auto& [group, owners] : of(0).groups()) {
    std::vector<char>& agree = agree_[group];
    std::vector<int>& root = root_[group];
    agree.assign(owners.size(), 1);
    root.assign(owners.size(), 0);
    for (size_t u = 0; u < owners.size(); ++u) {
      for (int d = 1; d < grid_.dp; ++d) agree[u] &= replicas_[d].owners(group)[u] == owners[u];
      if (agree[u]) continue;
      ++differing_;
      root[u] = next_root;
      next_root = (next_root + 1) % grid_.dp;
    }
  }
}

}  // namespace flextp

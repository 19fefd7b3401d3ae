#pragma once
// Every replica (tensor-parallel group) of a data x tensor parallel run keeps its own partition:
// its balancer moves units inside the group only. The data-parallel gradient sum must still add
// every unit's gradient over the replicas exactly once, so each rank keeps the owner lists of
// all replicas. They are exchanged at the first sum and then only when one changes (a
// migration), in one small all-reduce of owner slots over the world. From them: the units on which the replicas agree (the same slot
// owns the unit in every replica: an all-reduce per slot sums it) and the others (summed by an
// exchange between their owners, each with a root replica that adds the parts in replica order).
#include <map>
#include <string>
#include <vector>

#include "parallel/comm/communicator.h"
#include "parallel/dp/grid.h"
#include "parallel/tp/partition.h"

namespace flextp {

class ReplicaPartitions {
 public:
  // Assumes every replica at `initial` (a partition of grid.tp ranks) until an exchange.
  ReplicaPartitions(const Grid& grid, const Partition& initial);
  // Whether `mine` (this rank's replica's partition now) differs from what the others know of it.
  bool changed(const Partition& mine) const { return mine != of(grid_.dp_rank); }
  // Collective over the world's ranks (every rank, in world-rank order): learns every replica's
  // partition, each rank passing its own replica's.
  void exchange(Communicator& world, const Partition& mine);
  const Partition& of(int replica) const { return replicas_[replica]; }
  // The world rank holding unit u of `group` in `replica`.
  int holder(int replica, const std::string& group, int64_t u) const {
    return grid_.world_rank_of(replica, replicas_[replica].owners(group)[u]);
  }
  // Whether the same tensor-parallel slot owns unit u of `group` in every replica.
  bool agree(const std::string& group, int64_t u) const { return agree_.at(group)[u] != 0; }
  // For a unit on which the replicas differ: the replica whose holder sums its parts. Rotates over
  // the differing units so that the summing (and the sending back) is shared out.
  int root(const std::string& group, int64_t u) const { return root_.at(group)[u]; }
  int64_t differing() const { return differing_; }  // units on which the replicas differ

 private:
  Grid grid_;
  std::vector<Partition> replicas_;
  std::map<std::string, std::vector<char>> agree_;
  std::map<std::string, std::vector<int>> root_;
  int64_t differing_ = 0;
  void classify();
};

}  // namespace flextp

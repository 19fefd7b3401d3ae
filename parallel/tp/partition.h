#pragma once
// A partition maps every unit of every unit group to the rank that owns it. Groups are named by
// the layers ("h.3.head", "h.3.mlp", "vocab"); units are numbered from 0 within a group. Any rank
// may own any number of units of a group (zero included), contiguous or not.
#include <map>
#include <string>
#include <vector>

#include "core/unit_layout.h"

namespace flextp {

// A partition reads a UnitGroup's (core/unit_layout.h) name (its key), kind, layer and units.
class Partition {
 public:
  Partition() = default;
  // Each group split into contiguous ranges proportional to the weights (largest remainders).
  static Partition proportional(const std::vector<UnitGroup>& groups, const std::vector<double>& weights);
  static Partition even(const std::vector<UnitGroup>& groups, int ranks);

  int ranks() const { return ranks_; }
  // Owner rank of each unit of a group.
  const std::vector<int>& owners(const std::string& group) const;
  void set_owners(const std::string& group, std::vector<int> owners);
  // Units of a group owned by rank, ascending.
  std::vector<int64_t> units_of(const std::string& group, int rank) const;
  const std::map<std::string, std::vector<int>>& groups() const { return owners_; }
  bool operator==(const Partition& o) const { return owners_ == o.owners_ && ranks_ == o.ranks_; }
  bool operator!=(const Partition& o) const { return !(*this == o); }
  std::string str() const;  // "h.0.head 0,0,1,1; ..." for logs

 private:
  int ranks_ = 1;
  std::map<std::string, std::vector<int>> owners_;
};

// Units a rank owns under a partition, per kind (none skipped: the partition knows of no resizing).
UnitCounts units_per_kind(const std::vector<UnitGroup>& groups, const Partition& p, int rank);

// "3,1" -> {3, 1}: one positive weight per rank.
std::vector<double> parse_tp_weights(const std::string& spec, int ranks);

// Applies explicit assignments to a partition. Each spec is KIND=UNITS|UNITS|... with one list
// per rank (rank 0 first), UNITS a comma list of ids or ranges a-b (empty for none); KIND is
// head, mlp or vocab, optionally KIND@LAYER for one layer (head and mlp apply to every layer
// otherwise). Every unit must be named exactly once.
//   "head=0,1,2|3"   "mlp@1=0-5|6,7"   "vocab=|0-3"
void apply_tp_assignment(Partition& p, const std::vector<UnitGroup>& groups, const std::string& spec);

}  // namespace flextp

#pragma once
// The unit registry: every unit group of a model, described by the layers that own them (their
// kind, layer, size, whether resizing may skip them, what a unit costs). Partitions, the
// planner's costs, the resizer, checkpoints and metrics read it; nothing parses a group's name.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/unit_layout.h"
#include "nn/config.h"
#include "parallel/tp/partition.h"

namespace flextp {

class UnitRegistry {
 public:
  // The groups of a model of this config; their costs are for steps of shape s (zero without one).
  explicit UnitRegistry(const GPTConfig& c, const StepShape& s = {});
  const std::vector<std::shared_ptr<const UnitGroup>>& groups() const { return groups_; }
  // The group of a kind in a layer (layer -1: the model-wide group of that kind).
  std::shared_ptr<const UnitGroup> group(UnitKind kind, int64_t layer = -1) const;
  // The group a partition key names.
  const UnitGroup& named(const std::string& name) const;
  // The groups as the partition takes them.
  std::vector<UnitGroup> partition_groups() const;

 private:
  std::vector<std::shared_ptr<const UnitGroup>> groups_;
};

// Which tensor-parallel units this rank holds, in local order, for every layer of the model.
struct LocalUnits {
  std::vector<std::vector<int64_t>> heads;  // [layer] -> head ids
  std::vector<std::vector<int64_t>> mlp;    // [layer] -> MLP neuron-block ids
  std::vector<int64_t> vocab;               // vocabulary-block ids (embedding and LM head)

  // Every unit, in order: what a single process holds.
  static LocalUnits all(const GPTConfig& c);
  // The units a rank owns under a partition, ascending.
  static LocalUnits of_rank(const GPTConfig& c, const Partition& p, int rank);
};

// The model's unit groups, as the partition takes them.
std::vector<UnitGroup> unit_groups(const GPTConfig& c);

}  // namespace flextp

#pragma once
// Which tensor-parallel units this rank holds, in local order, for every layer of the model.
#include <cstdint>
#include <vector>

#include "nn/config.h"
#include "parallel/partition.h"

namespace flextp {

struct LocalUnits {
  std::vector<std::vector<int64_t>> heads;  // [layer] -> head ids
  std::vector<std::vector<int64_t>> mlp;    // [layer] -> MLP neuron-block ids
  std::vector<int64_t> vocab;               // vocabulary-block ids (embedding and LM head)

  // Every unit, in order: what a single process holds.
  static LocalUnits all(const GPTConfig& c);
  // The units a rank owns under a partition, ascending.
  static LocalUnits of_rank(const GPTConfig& c, const Partition& p, int rank);
};

// The model's unit groups, in the names the partition uses: "h.<l>.head", "h.<l>.mlp", "vocab".
std::vector<UnitGroup> unit_groups(const GPTConfig& c);

}  // namespace flextp

#pragma once
// The unit registry's vocabulary. A unit group is one layer's set of tensor-parallel units (the
// heads of layer 3, its MLP neuron blocks, the vocabulary blocks): the partition assigns its units
// to ranks, the balancer prices them, the resizer skips them. The layer that owns a group
// describes it once (nn/units.h gathers the model's groups); everything else reads these fields
// and never parses the group's name, which is only the partition's key and the name in logs.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace flextp {

enum class UnitKind { Head, Mlp, Vocab };
inline constexpr UnitKind kUnitKinds[] = {UnitKind::Head, UnitKind::Mlp, UnitKind::Vocab};

// "head", "mlp", "vocab": the names of --tp-assign and of the metrics file.
inline const char* unit_kind_name(UnitKind k) {
  switch (k) {
    case UnitKind::Head: return "head";
    case UnitKind::Mlp: return "mlp";
    case UnitKind::Vocab: return "vocab";
  }
  return "?";
}

// What one unit of a group costs per training step, and carries when it moves.
struct UnitCost {
  double work = 0;   // FLOP-equivalents of its forward and backward
  double bytes = 0;  // weights and optimizer slots
};

// The training step a cost is for: costs scale with the tokens and the optimizer's slots.
struct StepShape {
  int64_t batch = 0, seq_len = 0;
  int optimizer_slots = 0;
};

struct UnitGroup {
  std::string name;          // the partition's key, "h.<layer>.head", "h.<layer>.mlp", "vocab"
  UnitKind kind = UnitKind::Head;
  int64_t layer = -1;        // the block it belongs to; -1 for a model-wide group (vocabulary)
  int64_t units = 0;         // how many units the group has
  int64_t rows_per_unit = 0; // features per unit (head size, neurons, vocabulary rows)
  bool resizable = false;    // priority resizing may skip its units
  UnitCost cost;             // per unit, for the step shape the registry was built for
};

// The units one rank holds, per kind, and how many of them priority resizing skips now: a row of
// the balancer's monitor, the console's rank table and the metrics file.
struct UnitCounts {
  std::map<UnitKind, int64_t> held;  // every kind, zero included
  int64_t skipped = 0;

  UnitCounts() {
    for (UnitKind k : kUnitKinds) held[k] = 0;
  }
  // By name, as the metrics file writes them: "head", "mlp", "vocab", "skipped".
  std::map<std::string, int64_t> named() const {
    std::map<std::string, int64_t> out{{"skipped", skipped}};
    for (const auto& [kind, n] : held) out[unit_kind_name(kind)] = n;
    return out;
  }
  bool operator==(const UnitCounts& o) const { return held == o.held && skipped == o.skipped; }
};

// How a stored tensor differs from Hugging Face GPT-2's: Conv1D weights are [in, out]
// (transposed from a column-split weight); the fused QKV projection also orders its rows q, k, v
// of all heads instead of each head's q, k, v together.
enum class HfLayout { AsIs, Conv1D, Conv1DQkv };

// How a parameter's rows split into its group's units. Parameters of the same row shape in one
// layer (a weight and its bias) share one layout object.
struct UnitLayout {
  std::shared_ptr<const UnitGroup> group;
  int64_t unit_rows = 0;     // rows per unit (the last unit may have fewer)
  int64_t logical_rows = 0;  // rows of the whole logical parameter (all units)
  HfLayout hf = HfLayout::AsIs;

  // Rows of unit u in the logical parameter.
  int64_t rows_of_unit(int64_t u) const {
    int64_t left = logical_rows - u * unit_rows;
    return left < unit_rows ? left : unit_rows;
  }
};

}  // namespace flextp

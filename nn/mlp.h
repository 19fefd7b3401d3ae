#pragma once
// The MLP of a transformer block, of any kind (GPTConfig::mlp names it: "gelu", "swiglu"). Every
// kind's units are blocks of mlp_unit hidden neurons of kind UnitKind::Mlp, so partitions,
// migration, resizing, checkpoints and metrics treat all kinds alike. A kind is its own layer
// file (a class deriving from Mlp, with a static unit_group) plus one line in nn/mlp_kinds.h;
// Block builds whichever kind the config names.
#include <memory>
#include <string>
#include <vector>

#include "core/unit_layout.h"
#include "nn/config.h"
#include "nn/linear.h"

namespace flextp {

class Mlp : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) const = 0;  // [B, T, C] -> [B, T, C]
};

// The matrices every MLP kind builds its blocks from: C -> 4C column split (a block's rows with
// their bias; Conv1D in Hugging Face's files, as GPT-2's c_fc) and 4C -> C row split (a block's
// input rows; initialised smaller, as GPT-2's residual projections).
LinearSpec mlp_column_spec(const GPTConfig& c, std::shared_ptr<const UnitGroup> group,
                           const std::vector<int64_t>& blocks);
LinearSpec mlp_row_spec(const GPTConfig& c, std::shared_ptr<const UnitGroup> group,
                        const std::vector<int64_t>& blocks);

// Block `layer`'s neuron blocks as a unit group of kind UnitKind::Mlp ("h.<layer>.mlp", resizable),
// each block costing `cost`: what every kind's unit_group returns, with its own costs.
UnitGroup mlp_unit_group(const GPTConfig& c, int64_t layer, UnitCost cost);

// The neuron blocks of block `layer` as a unit group, priced for steps of shape s.
using MlpUnitGroup = UnitGroup (*)(const GPTConfig& c, int64_t layer, const StepShape& s);
// The layer named `prefix`, holding `blocks` (units of `group`) in local order.
using MlpFactory = std::unique_ptr<Mlp> (*)(const std::string& prefix, const GPTConfig& c,
                                            std::shared_ptr<const UnitGroup> group, std::vector<int64_t> blocks,
                                            Communicator* comm);

// One MLP kind as the registry knows it: its name, how to price its units and build its layer.
struct MlpRegistration {
  std::string name;
  MlpUnitGroup unit_group = nullptr;
  MlpFactory make = nullptr;
  // Hugging Face GPT-2's activation_function for this MLP; empty for a kind GPT-2 does not have
  // (such a model cannot be exported as GPT-2).
  std::string gpt2_activation;
};

// The registration of the kind of this name; an unknown name is refused with the known ones.
const MlpRegistration& mlp_registration(const std::string& kind);
std::vector<std::string> mlp_kind_names();

// The registration of a layer class: Layer(prefix, config, group, blocks, comm) and
// Layer::unit_group (its name is the line of nn/mlp_kinds.h that registers it).
template <typename Layer>
MlpRegistration registration_of(std::string gpt2_activation = {}) {
  MlpFactory make = [](const std::string& prefix, const GPTConfig& c, std::shared_ptr<const UnitGroup> group,
                       std::vector<int64_t> blocks, Communicator* comm) -> std::unique_ptr<Mlp> {
    return std::make_unique<Layer>(prefix, c, std::move(group), std::move(blocks), comm);
  };
  return {"", &Layer::unit_group, make, std::move(gpt2_activation)};
}

}  // namespace flextp

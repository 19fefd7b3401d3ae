#pragma once
// Linear layers of tensor-parallel form. Units are always rows of the weight:
//   Column: y = x W^T + b, W [out_local, in], b [out_local]; the output features are units.
//   Row:    y = x W + b,   W [in_local, out], b [out] replicated (added once, after the sum
//           of the ranks' partial products); the input features are units.
// With all units on one rank both are the ordinary linear layer.
#include <memory>
#include <vector>

#include "nn/module.h"
#include "parallel/comm/communicator.h"

namespace flextp {

enum class Split { Column, Row };

struct LinearSpec {
  int64_t in = 0, out = 0;
  Split split = Split::Column;
  std::shared_ptr<const UnitGroup> group;  // the units' group; none for an unsplit layer
  int64_t unit_rows = 0;         // weight rows per unit
  std::vector<int64_t> units;    // owned units, local order (ignored without a group)
  double init_std = 0.02;
  HfLayout hf = HfLayout::AsIs;  // how Hugging Face GPT-2 stores the weight and bias
};

class Linear : public Module {
 public:
  Linear(const std::string& prefix, const LinearSpec& spec, uint64_t seed, DType dtype,
         Communicator* comm = nullptr);
  // x [..., in_local or in] -> [..., out_local or out]. Row-split outputs are partial sums that
  // `reduce` (the tensor-parallel all-reduce; identity on one rank) completes before the bias.
  Tensor forward(const Tensor& x) const;
  // A column-split layer's forward without its bias add, and the bias rows in use: for a caller
  // that adds the bias inside its next pass (the MLP's bias_gelu). forward = add(product, bias).
  Tensor forward_without_bias(const Tensor& x) const;
  Tensor active_bias() const;

  Parameter& weight;
  Parameter& bias;

 private:
  static Tensor initial_weight(const std::string& prefix, const LinearSpec& spec, uint64_t seed,
                               DType dtype);
  static Tensor initial_bias(const LinearSpec& spec, DType dtype);
  Split split_;
  Communicator* comm_;
};

}  // namespace flextp

#pragma once
// Linear layers of tensor-parallel form. Units are always rows of the weight:
//   Column: y = x W^T + b, W [out_local, in], b [out_local]; the output features are units.
//   Row:    y = x W + b,   W [in_local, out], b [out] replicated (added once, after the sum
//           of the ranks' partial products); the input features are units.
// With all units on one rank both are the ordinary linear layer.
#include <vector>

#include "nn/module.h"
#include "parallel/communicator.h"

namespace flextp {

enum class Split { Column, Row };

struct LinearSpec {
  int64_t in = 0, out = 0;
  Split split = Split::Column;
  std::string unit_kind;         // "" for an unsplit layer
  std::string unit_group;        // the partition group ("h.0.head")
  int64_t unit_rows = 0;         // weight rows per unit (0: one block of all rows)
  std::vector<int64_t> units;    // owned units, local order (ignored when unit_kind is "")
  double init_std = 0.02;
};

class Linear : public Module {
 public:
  Linear(const std::string& prefix, const LinearSpec& spec, uint64_t seed, DType dtype,
         Communicator* comm = nullptr);
  // x [..., in_local or in] -> [..., out_local or out]. Row-split outputs are partial sums that
  // `reduce` (the tensor-parallel all-reduce; identity on one rank) completes before the bias.
  Tensor forward(const Tensor& x) const;

  Parameter& weight;
  Parameter& bias;
  Split split() const { return split_; }

 private:
  static Tensor initial_weight(const std::string& prefix, const LinearSpec& spec, uint64_t seed,
                               DType dtype);
  static Tensor initial_bias(const LinearSpec& spec, DType dtype);
  Split split_;
  Communicator* comm_;
};

}  // namespace flextp

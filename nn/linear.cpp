#include "nn/linear.h"

#include "core/ops/elementwise.h"
#include "core/ops/matmul.h"
#include "core/ops/shape_ops.h"
#include "nn/init.h"
#include "parallel/tp/tp_ops.h"

namespace flextp {
namespace {
// The logical row count of the weight: the split dimension.
int64_t logical_rows(const LinearSpec& s) { return s.split == Split::Column ? s.out : s.in; }
std::vector<int64_t> units_or_all(const LinearSpec& s) {
  return s.group ? s.units : std::vector<int64_t>{0};
}
int64_t unit_rows_or_all(const LinearSpec& s) {
  return s.group ? s.unit_rows : logical_rows(s);
}
}  // namespace

Tensor Linear::initial_weight(const std::string& prefix, const LinearSpec& s, uint64_t seed,
                              DType dtype) {
  int64_t cols = s.split == Split::Column ? s.in : s.out;
  return normal_unit_rows(prefix + ".weight", seed, units_or_all(s), unit_rows_or_all(s),
                          logical_rows(s), cols, s.init_std, dtype);
}

Tensor Linear::initial_bias(const LinearSpec& s, DType dtype) {
  if (s.split == Split::Row) return Tensor::zeros({s.out}, dtype);
  return Tensor::zeros({rows_of_units(units_or_all(s), unit_rows_or_all(s), s.out)}, dtype);
}

Linear::Linear(const std::string& prefix, const LinearSpec& s, uint64_t seed, DType dtype,
               Communicator* comm)
    : Module(prefix),
      weight(add_parameter("weight", initial_weight(prefix, s, seed, dtype), true)),
      bias(add_parameter("bias", initial_bias(s, dtype), false)),
      split_(s.split),
      comm_(comm) {
  if (s.group) {
    weight.layout = std::make_shared<const UnitLayout>(UnitLayout{s.group, s.unit_rows, logical_rows(s), s.hf});
    weight.units = s.units;
    if (s.split == Split::Column) {  // the bias follows the output features
      bias.layout = weight.layout;
      bias.units = s.units;
    }
  }
}

namespace {
// The rows in use: all, or the active ones of a resized parameter (skipped units' rows are
// simply not multiplied: the GEMM shrinks).
Tensor active_rows(const Parameter& p) { return p.resized() ? slice_rows(p.value, 0, p.active_rows) : p.value; }
}  // namespace

Tensor Linear::forward(const Tensor& x) const {
  if (split_ == Split::Column) return add(forward_without_bias(x), active_bias());
  // [..., out]: this rank's share of the sum
  Tensor partial = matmul(x, active_rows(weight), false, false, numerics().matmul);
  return add(reduce_from_tensor_parallel(partial, comm_), bias.value);
}

Tensor Linear::forward_without_bias(const Tensor& x) const {
  FLEXTP_CHECK(split_ == Split::Column, prefix(), ": only a column-split layer can leave its bias to the next op");
  return matmul(copy_to_tensor_parallel(x, comm_), active_rows(weight), false, true, numerics().matmul);
}

Tensor Linear::active_bias() const { return active_rows(bias); }

}  // namespace flextp

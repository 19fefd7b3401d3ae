#include "nn/linear.h"

#include <algorithm>

#include "core/autograd.h"
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
  Tensor w = active_rows(weight);
  Tensor partial = matmul(x, w, false, false, numerics().matmul);  // [..., out]: this rank's share of the sum
  if (impute_ == Impute::Stale) {
    Tensor extra = impute_skipped(x, w);
    if (extra.defined()) partial = add(partial, extra);
  }
  return add(reduce_from_tensor_parallel(partial, comm_), bias.value);
}

Tensor Linear::forward_without_bias(const Tensor& x) const {
  FLEXTP_CHECK(split_ == Split::Column, prefix(), ": only a column-split layer can leave its bias to the next op");
  return matmul(copy_to_tensor_parallel(x, comm_), active_rows(weight), false, true, numerics().matmul);
}

Tensor Linear::active_bias() const { return active_rows(bias); }

namespace {
// Whether a unit's row of the means holds a mean yet (the slot starts as zeros; a real mean is
// never exactly zero in every entry).
bool known(const Tensor& mean) {
  for (double v : mean.to(Device::cpu()).to(DType::F64).to_vector<double>())
    if (v != 0) return true;
  return false;
}
}  // namespace

Tensor Linear::impute_skipped(const Tensor& x, const Tensor& w) const {
  // Only a training forward (one that records a graph) moves the means: evaluation, sampling and
  // finite differences all run without grad, and must neither change what the next training step
  // imputes nor see means that depend on how often they were called.
  bool training = grad_enabled();
  NoGradGuard ng;
  constexpr double kKeep = 0.8;  // weight of the old mean in the running average
  int64_t in = x.size(-1), tokens = x.numel() / std::max<int64_t>(in, 1);
  if (training) {
    Tensor& means = weight.slot(kStaleMeanSlot);  // [rows, out]: a unit's mean in its first row
    if (in > 0 && tokens > 0) {
      Tensor mean_x = scale(sum_to_shape(view_as(x.detach(), {tokens, in}), {1, in}), 1.0 / tokens);  // [1, in]
      int64_t at = 0;
      for (int64_t u : weight.units) {
        int64_t rows = weight.rows_of_unit(u);
        if (at + rows > in) break;  // the skipped units start here
        Tensor c = matmul(slice_rows(view_as(mean_x, {in, 1}), at, rows).detach(), slice_rows(w.detach(), at, rows),
                          true, false, numerics().matmul);  // [1, out]
        Tensor mean = slice_rows(means, at, 1);
        mean.copy_from(known(mean) ? add(scale(mean, kKeep), scale(c, 1 - kKeep)) : c);
        at += rows;
      }
    }
  }
  auto means = weight.state.find(kStaleMeanSlot);
  if (!weight.resized() || means == weight.state.end() || means->second.shape() != weight.value.shape()) return Tensor();
  Tensor extra;
  int64_t at = 0;
  for (int64_t u : weight.units) {
    const int64_t first = at;
    at += weight.rows_of_unit(u);
    if (at <= weight.active_rows) continue;
    Tensor mean = view_as(slice_rows(means->second, first, 1), {w.size(1)});  // [out]
    if (!known(mean)) continue;
    extra = extra.defined() ? add(extra, mean) : mean.clone();
  }
  return extra;
}

}  // namespace flextp

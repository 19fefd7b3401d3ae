#pragma once
// add / mul of two tensors of one shape, or of a tensor and one that repeats along its leading
// dimensions (a bias [C] against activations [B, T, C], a scalar), scale by a constant, and the
// in-place helpers used by autograd and optimizers.
#include "core/tensor.h"

namespace flextp {

enum class BinaryOp { Add, Mul };

Tensor add(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& x, double s);

// Not recorded by autograd:
void add_inplace(Tensor& dst, const Tensor& src, double alpha = 1.0);  // dst += alpha * src
void scale_inplace(Tensor& x, double s);  // x *= s: bitwise scale(x, s), without a second tensor
// Sums g over the leading dimensions along which a tensor of `shape` repeated, giving `shape`.
Tensor sum_to_shape(const Tensor& g, const Shape& shape);

namespace cpu {
void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
void scale(const Tensor& x, double s, Tensor& out);
void axpy(Tensor& dst, const Tensor& src, double alpha);
void sum_to(const Tensor& g, Tensor& out);
}  // namespace cpu
namespace cuda {
void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
void scale(const Tensor& x, double s, Tensor& out);
void axpy(Tensor& dst, const Tensor& src, double alpha);
void sum_to(const Tensor& g, Tensor& out);
}  // namespace cuda

}  // namespace flextp

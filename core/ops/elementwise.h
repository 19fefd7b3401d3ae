#pragma once
// add / sub / mul with NumPy broadcasting (a bias [C] against activations [B, T, C], a scalar,
// ...), scale by a constant, and the in-place helpers used by autograd and optimizers.
#include "core/tensor.h"

namespace flextp {

enum class BinaryOp { Add, Sub, Mul };

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& x, double s);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator*(const Tensor& a, double s) { return scale(a, s); }

// The shape both broadcast to; an error naming both shapes when they cannot.
Shape broadcast_shape(const Shape& a, const Shape& b);

// Not recorded by autograd:
void add_inplace(Tensor& dst, const Tensor& src, double alpha = 1.0);  // dst += alpha * src
void scale_inplace(Tensor& x, double s);  // x *= s: bitwise scale(x, s), without a second tensor
// Sums g over the dimensions that broadcasting expanded, giving a tensor of `shape`.
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

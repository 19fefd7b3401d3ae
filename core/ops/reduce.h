#pragma once
// The sum of all elements, to a scalar (shape []); the sum of squares, not recorded by autograd.
#include "core/tensor.h"

namespace flextp {

Tensor sum(const Tensor& x);
// Bitwise sum(mul(x, x)) (each square rounded to x's dtype, summed in double), in one pass over x
// on the CPU (the gradient norm's read of every parameter's gradient). Not recorded by autograd.
Tensor sum_squares(const Tensor& x);

namespace cpu {
void sum_all(const Tensor& x, Tensor& out);
void sum_squares_all(const Tensor& x, Tensor& out);
}
namespace cuda {
void sum_all(const Tensor& x, Tensor& out);
}

}  // namespace flextp

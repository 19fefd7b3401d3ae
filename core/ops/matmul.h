#pragma once
// Matrix products on row-major tensors, with either operand transposed:
//   2-D:      a [M, K] x b [K, N] -> [M, N]   (a given as [K, M] if trans_a, b as [N, K] if trans_b)
//   batched:  a [S, M, K] x b [S, K, N] -> [S, M, N]
//   shared b: a [..., M, K] x b [K, N] -> [..., M, N] (leading dims of a folded into M)
// A linear layer with weight W [out, in] is matmul(x, W, false, true).
// `precision` is how a GPU's f32 products use the tensor cores (core/numerics.h); the backward's
// products use the same. The CPU computes in full precision and ignores it.
#include "core/numerics.h"
#include "core/tensor.h"

namespace flextp {

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false,
              MatmulPrecision precision = MatmulPrecision::f32);

namespace cpu {
// c (= or +=) op(a) op(b); a, b, c 2-D, or 3-D with the same leading batch size.
void matmul(const Tensor& a, const Tensor& b, Tensor& c, bool trans_a, bool trans_b,
            bool accumulate, MatmulPrecision precision);
}
namespace cuda {
void matmul(const Tensor& a, const Tensor& b, Tensor& c, bool trans_a, bool trans_b,
            bool accumulate, MatmulPrecision precision);
}

}  // namespace flextp

#pragma once
// Matrix products on row-major tensors, with either operand transposed:
//   2-D:      a [M, K] x b [K, N] -> [M, N]   (a given as [K, M] if trans_a, b as [N, K] if trans_b)
//   batched:  a [S, M, K] x b [S, K, N] -> [S, M, N]
//   shared b: a [..., M, K] x b [K, N] -> [..., M, N] (leading dims of a folded into M)
// A linear layer with weight W [out, in] is matmul(x, W, false, true).
#include "core/tensor.h"

namespace flextp {

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

namespace cpu {
// c (= or +=) op(a) op(b); a, b, c 2-D, or 3-D with the same leading batch size.
void matmul(const Tensor& a, const Tensor& b, Tensor& c, bool trans_a, bool trans_b,
            bool accumulate);
}
namespace cuda {
void matmul(const Tensor& a, const Tensor& b, Tensor& c, bool trans_a, bool trans_b,
            bool accumulate);
}

}  // namespace flextp

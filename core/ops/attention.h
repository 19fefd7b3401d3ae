#pragma once
// Fused causal self-attention over packed heads.
//   qkv [B, T, H * 3 * D]: for each head h, its q, k and v (D each) lie side by side, heads one
//                          after another, so one head (a tensor-parallel unit) is one contiguous
//                          block of 3D columns of the QKV projection.
//   out [B, T, H * D]:     head h's output in columns [h D, (h + 1) D).
// out = softmax(q k^T / sqrt(D), causal) v per (batch, head). The forward keeps only the
// log-sum-exp of each score row [B, H, T]; the backward recomputes the probabilities.
// `numerics` says, on a GPU, whether cuDNN's fused attention runs and how the own kernels' products
// use the tensor cores (core/numerics.h); the backward uses the forward's. The CPU ignores it.
#include "core/numerics.h"
#include "core/tensor.h"

namespace flextp {

Tensor attention(const Tensor& qkv, int64_t n_head, const Numerics& numerics = {});

namespace cpu {
void attention_forward(const Tensor& qkv, int64_t n_head, Tensor& out, Tensor& lse, const Numerics& numerics);
void attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, int64_t n_head, Tensor& dqkv, const Numerics& numerics);
}  // namespace cpu
namespace cuda {
void attention_forward(const Tensor& qkv, int64_t n_head, Tensor& out, Tensor& lse, const Numerics& numerics);
void attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, int64_t n_head, Tensor& dqkv, const Numerics& numerics);
}  // namespace cuda

}  // namespace flextp

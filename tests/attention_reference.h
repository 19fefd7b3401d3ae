#pragma once
// The CPU attention on random f64 inputs, forward and backward: what the GPU attention's steps
// (tests/test_cuda_plans.cpp) and cuDNN's attention graph (tests/test_sdpa_graph.cpp) must equal.
#include "core/cuda/attention_plan.h"
#include "core/ops/attention.h"
#include "core/tensor.h"

namespace flextp::test {

struct AttentionReference {
  int64_t b, t, heads, d, w;
  Tensor qkv, dout, out, lse, dqkv;
  AttentionReference(int64_t b_, int64_t t_, int64_t heads_, int64_t d_, uint64_t seed)
      : b(b_), t(t_), heads(heads_), d(d_), w(heads_ * 3 * d_) {
    qkv = Tensor::randn({b, t, w}, seed, 0, 0, 1, DType::F64);
    dout = Tensor::randn({b, t, heads * d}, seed + 1, 0, 0, 1, DType::F64);
    out = Tensor::zeros({b, t, heads * d}, DType::F64);
    lse = Tensor::zeros({b, heads, t}, DType::F64);
    dqkv = Tensor::zeros({b, t, w}, DType::F64);
    cpu::attention_forward(qkv, heads, out, lse, Numerics{});
    cpu::attention_backward(qkv, out, lse, dout, heads, dqkv, Numerics{});
  }
  cuda::AttentionLayout layout() const { return cuda::AttentionLayout(b, t, heads, w); }
};

}  // namespace flextp::test

#pragma once
// Causal self-attention on cuDNN's fused flash attention (core/cuda/sdpa_graph.h), for the f32
// model: q, k, v, out and their gradients are rounded to bf16 around the fused kernels, whose
// softmax and accumulators stay f32; the log-sum-exp it keeps is the one the own kernels keep, so
// either path can take the other's forward. Opt-in (Numerics::cudnn_attention): each call returns
// false, and the own kernels run, where it is not `wanted` or cuDNN cannot take the call: no
// libcudnn.so.9 to load, a layout without a cuDNN engine, a graph cuDNN rejects;
// cuda::attention_path() says which path the last call took and why.
#include <string>

#include "core/cuda/attention_plan.h"
#include "core/tensor.h"

namespace flextp::cuda {

bool cudnn_attention_forward(const Tensor& qkv, int64_t n_head, Tensor& out, Tensor& lse, bool wanted);
bool cudnn_attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& lse, const Tensor& dout,
                              int64_t n_head, Tensor& dqkv, bool wanted);

// Builds cuDNN's descriptors of the forward or backward graph for layout L, every tensor and
// operation and the operation graph, which needs libcudnn but no GPU: "" when cuDNN accepts them,
// else its message ("unavailable: ..." when cuDNN cannot be loaded). Engines need a GPU.
std::string cudnn_attention_describe(bool forward, const AttentionLayout& L);

}  // namespace flextp::cuda

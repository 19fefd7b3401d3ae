#pragma once
// cuDNN's fused flash attention, as the operation graph that cuDNN's runtime-fusion engine
// recognises: matmuls, pointwise ops, row reductions and reshapes over 4-d tensors, written here as
// plain data. core/cuda/cudnn_attention.cu turns a graph into cuDNN backend descriptors;
// tests/test_sdpa_graph.cpp evaluates the same graph on the CPU against the CPU attention, so
// the math, the masks and every stride into the packed qkv layout are checked without a GPU.
//
// Forward:  S = Q K^T scale, causal mask, Stats = max + log(sum exp) per row (the log-sum-exp the
//           other attention paths keep), P = softmax(S), O = P V.
// Backward: softmax_sum = rowsum(dO * O); P = exp(Q K^T scale - Stats) under the mask;
//           dV = P^T dO; dS = P (dO V^T - softmax_sum) scale; dK = dS^T Q; dQ = dS K.
// Q, K, V, dQ, dK, dV and O, dO are the "io" type (bf16 on the GPU); scores, statistics and
// accumulators are f32.
#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda/attention_plan.h"

namespace flextp::cuda::sdpa {

enum class Type { io, f32, i32, boolean };

// Tensors that the caller binds to memory (or, for the scalars, to a value), by unique id.
enum Uid : int64_t {
  kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV,
  kScale, kNegInf, kOne,     // scalars passed by value
  kSoftmaxSum, kDQAccum,     // backward workspace (f32), placed in the caller's scratch
  kFirstVirtual = 100,
};

struct GraphTensor {
  int64_t uid;
  int64_t dims[4];
  int64_t strides[4];
  Type type;
  bool is_virtual;
  bool by_value;
  float value;  // for by_value scalars
};

enum class OpKind { matmul, pointwise, reduction, reshape };
enum class Pointwise { mul, sub, add, div, exp, log, gen_index, cmp_ge, binary_select, identity };
enum class Reduce { max, add };

struct GraphOp {
  OpKind kind;
  Pointwise pointwise = Pointwise::identity;
  Reduce reduce = Reduce::add;
  int64_t axis = 0;          // gen_index
  Type compute = Type::f32;  // pointwise math precision
  // matmul: in0 [.., m, k] x in1 [.., k, n] -> out; pointwise: binary_select picks in0 where in2
  // holds, else in1; reduction: out has 1 on the reduced axes.
  int64_t in0 = 0, in1 = 0, in2 = 0, out = 0;
};

struct Graph {
  std::vector<GraphTensor> tensors;
  std::vector<GraphOp> ops;
  const GraphTensor& tensor(int64_t uid) const;
  // Bytes of f32 workspace the caller provides for the non-virtual workspace tensors, and where
  // each one starts in it.
  int64_t workspace_bytes() const;
  int64_t workspace_offset(int64_t uid) const;
};

Graph forward_graph(const AttentionLayout& L);
Graph backward_graph(const AttentionLayout& L);

// Whether cuDNN (at run-time version `cudnn_version`, e.g. 91900) can take this layout; if not,
// `why` says what it lacks and the own kernels run instead.
bool supported(const AttentionLayout& L, int64_t cudnn_version, std::string* why);

}  // namespace flextp::cuda::sdpa

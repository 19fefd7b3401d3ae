// GPU side of core/ops/attention.h: cuDNN's fused flash attention when the numerics ask for it and
// it can take the call (core/cuda/cudnn_attention.h), otherwise the steps of core/cuda/attention_plan.h on
// cuBLAS (strided-batched over the heads of one sequence, reading q, k, v in place in the packed
// layout) and own kernels for the causal softmax and the score gradient. The score matrices of
// one sequence are the only scratch ([H, T, T]).
#include "core/cuda/attention_plan.h"
#include "core/cuda/blas.h"
#include "core/cuda/cudnn_attention.h"
#include "core/cuda/launch.h"
#include "core/ops/attention.h"

namespace flextp::cuda {
namespace {

// Row r of t scores holds position i = r % t: entries j <= i are live, the rest masked.
template <typename T>
__global__ void causal_softmax_kernel(T* s, int64_t t, T scale, T* lse) {
  int64_t i = blockIdx.x % t;
  T* row = s + blockIdx.x * static_cast<size_t>(t);
  T m = -INFINITY;
  for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) m = max(m, row[j] * scale);
  m = block_max(m);
  T sum = 0;
  for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) sum += exp(row[j] * scale - m);
  sum = block_sum(sum);
  T inv = T(1) / sum;
  for (int64_t j = threadIdx.x; j < t; j += blockDim.x)
    row[j] = j <= i ? exp(row[j] * scale - m) * inv : T(0);
  if (threadIdx.x == 0) lse[blockIdx.x] = m + log(sum);
}

// P = exp(S scale - lse) on and below the diagonal, 0 above: the forward's probabilities again.
template <typename T>
__global__ void recompute_probs_kernel(T* s, int64_t t, T scale, const T* lse) {
  int64_t i = blockIdx.x % t;
  T* row = s + blockIdx.x * static_cast<size_t>(t);
  T l = lse[blockIdx.x];
  for (int64_t j = threadIdx.x; j < t; j += blockDim.x) row[j] = j <= i ? exp(row[j] * scale - l) : T(0);
}

// dS = P (dP - rowsum(dO O)) scale, in place of dP. o, dout point at this sequence's first row.
template <typename T>
__global__ void scores_grad_kernel(const T* p, T* dp, const T* o, const T* dout, int64_t t,
                                   int64_t d, int64_t out_stride, T scale) {
  int64_t h = blockIdx.x / t, i = blockIdx.x % t;
  const T* orow = o + i * out_stride + h * d;
  const T* grow = dout + i * out_stride + h * d;
  T di = 0;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) di += orow[c] * grow[c];
  di = block_sum(di);
  size_t base = blockIdx.x * static_cast<size_t>(t);
  for (int64_t j = threadIdx.x; j < t; j += blockDim.x) dp[base + j] = p[base + j] * (dp[base + j] - di) * scale;
}

struct CudaAttention {
  MatmulPrecision precision;
  template <typename T>
  void gemm(int64_t m, int64_t n, int64_t k, RowOperand<T> a, RowOperand<T> b, T* c, int64_t ldc,
            int64_t stride_c, int64_t batch, T alpha, T beta) {
    cuda::gemm<T>(m, n, k, a, b, c, ldc, stride_c, batch, alpha, beta, precision);
  }
  template <typename T>
  void causal_softmax(T* s, int64_t rows, int64_t t, T scale, T* lse) {
    causal_softmax_kernel<T><<<rows, kBlock, 0, stream()>>>(s, t, scale, lse);
    FLEXTP_CUDA_LAUNCHED("attention");
  }
  template <typename T>
  void recompute_probs(T* s, int64_t rows, int64_t t, T scale, const T* lse) {
    recompute_probs_kernel<T><<<rows, kBlock, 0, stream()>>>(s, t, scale, lse);
    FLEXTP_CUDA_LAUNCHED("attention backward");
  }
  template <typename T>
  void scores_grad(const T* p, T* dp, const T* o, const T* dout, int64_t rows, int64_t t, int64_t d,
                   int64_t out_stride, T scale) {
    scores_grad_kernel<T><<<rows, kBlock, 0, stream()>>>(p, dp, o, dout, t, d, out_stride, scale);
    FLEXTP_CUDA_LAUNCHED("attention backward");
  }
};

}  // namespace

void attention_forward(const Tensor& qkv, int64_t n_head, Tensor& out, Tensor& lse, const Numerics& numerics) {
  if (n_head == 0 || qkv.numel() == 0) return;
  if (cudnn_attention_forward(qkv, n_head, out, lse, numerics.cudnn_attention)) return;
  AttentionLayout L(qkv.size(0), qkv.size(1), n_head, qkv.size(2));
  Tensor scores = Tensor::empty({L.h, L.t, L.t}, qkv.dtype(), qkv.device());
  CudaAttention be{numerics.matmul};
  dispatch_float(qkv.dtype(), "attention", [&](auto tag) {
    using T = decltype(tag);
    attention_forward_plan<T>(be, L, qkv.data<T>(), out.data<T>(), lse.data<T>(), scores.data<T>());
  });
}

void attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, int64_t n_head, Tensor& dqkv, const Numerics& numerics) {
  if (n_head == 0 || qkv.numel() == 0) return;
  if (cudnn_attention_backward(qkv, out, lse, dout, n_head, dqkv, numerics.cudnn_attention)) return;
  AttentionLayout L(qkv.size(0), qkv.size(1), n_head, qkv.size(2));
  Tensor probs = Tensor::empty({L.h, L.t, L.t}, qkv.dtype(), qkv.device());
  Tensor dscores = Tensor::empty({L.h, L.t, L.t}, qkv.dtype(), qkv.device());
  CudaAttention be{numerics.matmul};
  dispatch_float(qkv.dtype(), "attention backward", [&](auto tag) {
    using T = decltype(tag);
    attention_backward_plan<T>(be, L, qkv.data<T>(), out.data<T>(), lse.data<T>(), dout.data<T>(),
                               dqkv.data<T>(), probs.data<T>(), dscores.data<T>());
  });
}

}  // namespace flextp::cuda

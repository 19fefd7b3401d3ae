// GPU side of core/ops/attention.h: the products go to cuBLAS (strided-batched over the heads of
// one sequence, reading q, k, v in place in the packed layout), the causal softmax and its
// backward are own kernels. The score matrices of one sequence are the only scratch ([H, T, T]).
#include <cmath>

#include "core/cuda/blas.h"
#include "core/cuda/launch.h"
#include "core/ops/attention.h"

namespace flextp::cuda {
namespace {

// Row r = h T + i of the scores of one sequence: entries j <= i are live, the rest masked.
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

struct Layout {
  int64_t b, t, h, d, qkv_stride, out_stride;
  Layout(const Tensor& qkv, int64_t n_head)
      : b(qkv.size(0)), t(qkv.size(1)), h(n_head), d(qkv.size(2) / (3 * n_head)),
        qkv_stride(qkv.size(2)), out_stride(n_head * d) {}
  int64_t qkv_seq() const { return t * qkv_stride; }
  int64_t out_seq() const { return t * out_stride; }
};

template <typename T>
void forward_impl(const Tensor& qkv, int64_t n_head, Tensor& out, Tensor& lse) {
  Layout L(qkv, n_head);
  Tensor scores = Tensor::empty({L.h, L.t, L.t}, qkv.dtype(), qkv.device());
  T* s = scores.data<T>();
  T scale = T(1) / sqrt(T(L.d));
  for (int64_t b = 0; b < L.b; ++b) {
    const T* q = qkv.data<T>() + b * L.qkv_seq();
    RowOperand<T> Q{q, L.qkv_stride, 3 * L.d, false}, K{q + L.d, L.qkv_stride, 3 * L.d, true};
    gemm<T>(L.t, L.t, L.d, Q, K, s, L.t, L.t * L.t, L.h, T(1), T(0));
    causal_softmax_kernel<T><<<L.h * L.t, kBlock, 0, stream()>>>(s, L.t, scale,
                                                                 lse.data<T>() + b * L.h * L.t);
    FLEXTP_CUDA_LAUNCHED("attention");
    RowOperand<T> P{s, L.t, L.t * L.t, false}, V{q + 2 * L.d, L.qkv_stride, 3 * L.d, false};
    gemm<T>(L.t, L.d, L.t, P, V, out.data<T>() + b * L.out_seq(), L.out_stride, L.d, L.h, T(1), T(0));
  }
}

template <typename T>
void backward_impl(const Tensor& qkv, const Tensor& out, const Tensor& lse, const Tensor& dout,
                   int64_t n_head, Tensor& dqkv) {
  Layout L(qkv, n_head);
  Tensor probs = Tensor::empty({L.h, L.t, L.t}, qkv.dtype(), qkv.device());
  Tensor dscores = Tensor::empty({L.h, L.t, L.t}, qkv.dtype(), qkv.device());
  T *p = probs.data<T>(), *ds = dscores.data<T>();
  T scale = T(1) / sqrt(T(L.d));
  int64_t tt = L.t * L.t, s3 = 3 * L.d;
  for (int64_t b = 0; b < L.b; ++b) {
    const T* q = qkv.data<T>() + b * L.qkv_seq();
    T* dq = dqkv.data<T>() + b * L.qkv_seq();
    const T* o = out.data<T>() + b * L.out_seq();
    const T* dO = dout.data<T>() + b * L.out_seq();
    RowOperand<T> Q{q, L.qkv_stride, s3, false}, Kt{q + L.d, L.qkv_stride, s3, true};
    gemm<T>(L.t, L.t, L.d, Q, Kt, p, L.t, tt, L.h, T(1), T(0));
    recompute_probs_kernel<T><<<L.h * L.t, kBlock, 0, stream()>>>(p, L.t, scale,
                                                                  lse.data<T>() + b * L.h * L.t);
    FLEXTP_CUDA_LAUNCHED("attention backward");
    // dV = P^T dO
    gemm<T>(L.t, L.d, L.t, RowOperand<T>{p, L.t, tt, true}, RowOperand<T>{dO, L.out_stride, L.d, false},
            dq + 2 * L.d, L.qkv_stride, s3, L.h, T(1), T(0));
    // dP = dO V^T
    gemm<T>(L.t, L.t, L.d, RowOperand<T>{dO, L.out_stride, L.d, false},
            RowOperand<T>{q + 2 * L.d, L.qkv_stride, s3, true}, ds, L.t, tt, L.h, T(1), T(0));
    scores_grad_kernel<T><<<L.h * L.t, kBlock, 0, stream()>>>(p, ds, o, dO, L.t, L.d, L.out_stride, scale);
    FLEXTP_CUDA_LAUNCHED("attention backward");
    // dQ = dS K, dK = dS^T Q
    gemm<T>(L.t, L.d, L.t, RowOperand<T>{ds, L.t, tt, false}, RowOperand<T>{q + L.d, L.qkv_stride, s3, false},
            dq, L.qkv_stride, s3, L.h, T(1), T(0));
    gemm<T>(L.t, L.d, L.t, RowOperand<T>{ds, L.t, tt, true}, RowOperand<T>{q, L.qkv_stride, s3, false},
            dq + L.d, L.qkv_stride, s3, L.h, T(1), T(0));
  }
}

}  // namespace

void attention_forward(const Tensor& qkv, int64_t n_head, Tensor& out, Tensor& lse) {
  if (n_head == 0 || qkv.numel() == 0) return;
  dispatch_float(qkv.dtype(), "attention", [&](auto tag) {
    forward_impl<decltype(tag)>(qkv, n_head, out, lse);
  });
}

void attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, int64_t n_head, Tensor& dqkv) {
  if (n_head == 0 || qkv.numel() == 0) return;
  dispatch_float(qkv.dtype(), "attention backward", [&](auto tag) {
    backward_impl<decltype(tag)>(qkv, out, lse, dout, n_head, dqkv);
  });
}

}  // namespace flextp::cuda

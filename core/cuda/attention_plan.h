#pragma once
// The steps of the GPU attention (core/cuda/attention.cu), written once over a backend: the CUDA
// one launches cuBLAS and kernels; tests/test_cuda_plans.cpp runs the same steps on the CPU with a
// reference column-major GEMM and reference kernels, against the CPU attention. Plain C++.
//
// Per sequence b: S = Q K^T for all heads at once (cuBLAS strided-batched over heads: head h's
// q, k, v are 3D columns apart in a row of qkv), causal softmax of S in place (P, and the
// log-sum-exp per row), O = P V written straight into out's columns of head h.
// Backward, per sequence: P again from Q K^T and the saved lse; dV = P^T dO; dP = dO V^T;
// dS = P (dP - rowsum(dO O)) / sqrt(D); dQ = dS K; dK = dS^T Q; all written in place into dqkv.
//
// A Backend provides, as templates over the element type T:
//   gemm(m, n, k, RowOperand a, RowOperand b, T* c, ldc, stride_c, batch, alpha, beta)   (blas.h)
//   causal_softmax(T* s, rows, t, scale, T* lse): rows of t scores, row r at position r % t
//   recompute_probs(T* s, rows, t, scale, const T* lse)
//   scores_grad(const T* p, T* dp, const T* o, const T* dout, rows, t, d, out_stride, scale)
#include <cmath>
#include <cstdint>

#include "core/cuda/blas.h"

namespace flextp::cuda {

struct AttentionLayout {
  int64_t b, t, h, d, qkv_stride, out_stride;
  AttentionLayout(int64_t batch, int64_t t_, int64_t n_head, int64_t qkv_width)
      : b(batch), t(t_), h(n_head), d(qkv_width / (3 * n_head)), qkv_stride(qkv_width),
        out_stride(n_head * (qkv_width / (3 * n_head))) {}
  int64_t qkv_seq() const { return t * qkv_stride; }
  int64_t out_seq() const { return t * out_stride; }
};

// scores: scratch of h * t * t elements.
template <typename T, typename Backend>
void attention_forward_plan(Backend& be, const AttentionLayout& L, const T* qkv, T* out, T* lse, T* scores) {
  const T scale = T(1) / std::sqrt(T(L.d));
  const int64_t tt = L.t * L.t, s3 = 3 * L.d;
  for (int64_t b = 0; b < L.b; ++b) {
    const T* q = qkv + b * L.qkv_seq();
    be.template gemm<T>(L.t, L.t, L.d, RowOperand<T>{q, L.qkv_stride, s3, false},
                        RowOperand<T>{q + L.d, L.qkv_stride, s3, true}, scores, L.t, tt, L.h, T(1), T(0));
    be.template causal_softmax<T>(scores, L.h * L.t, L.t, scale, lse + b * L.h * L.t);
    be.template gemm<T>(L.t, L.d, L.t, RowOperand<T>{scores, L.t, tt, false},
                        RowOperand<T>{q + 2 * L.d, L.qkv_stride, s3, false}, out + b * L.out_seq(),
                        L.out_stride, L.d, L.h, T(1), T(0));
  }
}

// probs, dscores: scratch of h * t * t elements each.
template <typename T, typename Backend>
void attention_backward_plan(Backend& be, const AttentionLayout& L, const T* qkv, const T* out,
                             const T* lse, const T* dout, T* dqkv, T* probs, T* dscores) {
  const T scale = T(1) / std::sqrt(T(L.d));
  const int64_t tt = L.t * L.t, s3 = 3 * L.d;
  for (int64_t b = 0; b < L.b; ++b) {
    const T* q = qkv + b * L.qkv_seq();
    T* dq = dqkv + b * L.qkv_seq();
    const T* o = out + b * L.out_seq();
    const T* d_o = dout + b * L.out_seq();
    be.template gemm<T>(L.t, L.t, L.d, RowOperand<T>{q, L.qkv_stride, s3, false},
                        RowOperand<T>{q + L.d, L.qkv_stride, s3, true}, probs, L.t, tt, L.h, T(1), T(0));
    be.template recompute_probs<T>(probs, L.h * L.t, L.t, scale, lse + b * L.h * L.t);
    // dV = P^T dO
    be.template gemm<T>(L.t, L.d, L.t, RowOperand<T>{probs, L.t, tt, true},
                        RowOperand<T>{d_o, L.out_stride, L.d, false}, dq + 2 * L.d, L.qkv_stride, s3, L.h,
                        T(1), T(0));
    // dP = dO V^T, then dS in place
    be.template gemm<T>(L.t, L.t, L.d, RowOperand<T>{d_o, L.out_stride, L.d, false},
                        RowOperand<T>{q + 2 * L.d, L.qkv_stride, s3, true}, dscores, L.t, tt, L.h, T(1), T(0));
    be.template scores_grad<T>(probs, dscores, o, d_o, L.h * L.t, L.t, L.d, L.out_stride, scale);
    // dQ = dS K, dK = dS^T Q
    be.template gemm<T>(L.t, L.d, L.t, RowOperand<T>{dscores, L.t, tt, false},
                        RowOperand<T>{q + L.d, L.qkv_stride, s3, false}, dq, L.qkv_stride, s3, L.h, T(1), T(0));
    be.template gemm<T>(L.t, L.d, L.t, RowOperand<T>{dscores, L.t, tt, true},
                        RowOperand<T>{q, L.qkv_stride, s3, false}, dq + L.d, L.qkv_stride, s3, L.h, T(1), T(0));
  }
}

}  // namespace flextp::cuda

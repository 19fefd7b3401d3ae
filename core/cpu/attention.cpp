#include "core/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/cpu/eigen.h"
#include "core/cpu/sgemm.h"
#include "core/dispatch.h"

namespace flextp::cpu {
namespace {

// Pointers of one (batch, head) pair inside the packed layouts of core/ops/attention.h.
struct HeadView {
  int64_t t, d, qkv_stride, out_stride;
  int64_t qkv_offset, out_offset;
  HeadView(const Tensor& qkv, int64_t n_head, int64_t bh) {
    t = qkv.size(1);
    qkv_stride = qkv.size(2);
    d = qkv_stride / (3 * n_head);
    out_stride = n_head * d;
    int64_t b = bh / n_head, h = bh % n_head;
    qkv_offset = b * t * qkv_stride + h * 3 * d;
    out_offset = b * t * out_stride + h * d;
  }
};

// Causal blocks: rows [r0, r0 + rows) of the scores only reach columns [0, r0 + rows), so every
// product runs over the blocks on and below the diagonal (at T 128, 10 of 16 blocks of 32): the
// blocks above are zero and are neither computed nor multiplied. The skipped terms are exact zeros,
// so sums are unchanged but for their order.
constexpr int64_t kBlock = 32;

// C (+)= op(A) op(B), row-major with leading dimensions: the packed f32 kernel (one thread: this
// runs inside the loop over (batch, head) pairs) or Eigen (f64, or no AVX2).
template <typename T>
void product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
             int64_t ldc, bool accumulate = false) {
  if constexpr (std::is_same_v<T, float>) {
    if (sgemm_available()) {
      sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
      return;
    }
  }
  eigen_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

// Raw scores S = q k^T of rows [r0, r1) against columns [0, r1), into s (t x t, row-major).
template <typename T>
void scores(const T* base, const HeadView& v, int64_t r0, int64_t r1, T* s) {
  product(false, true, r1 - r0, r1, v.d, base + v.qkv_offset + r0 * v.qkv_stride, v.qkv_stride,
          base + v.qkv_offset + v.d, v.qkv_stride, s + r0 * v.t, v.t);
}

// P = exp(S / sqrt(D) - lse) on and below the diagonal, 0 above it (up to column r1), rows [r0, r1).
template <typename T>
void probabilities(const T* base, const HeadView& v, const T* lse, int64_t r0, int64_t r1, RowMatrix<T>& p) {
  scores(base, v, r0, r1, p.data());
  T scale = T(1) / std::sqrt(T(v.d));
  for (int64_t i = r0; i < r1; ++i) {
    p.row(i).head(i + 1) = (p.row(i).head(i + 1).array() * scale - lse[i]).exp().matrix();
    p.row(i).segment(i + 1, r1 - i - 1).setZero();
  }
}

template <typename T>
void forward_impl(const Tensor& qkv, int64_t n_head, Tensor& out, Tensor& lse) {
  int64_t pairs = qkv.size(0) * n_head;
  const T* base = qkv.data<T>();
  T* pout = out.data<T>();
  T* plse = lse.data<T>();
#pragma omp parallel
  {
    RowMatrix<T> s;
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < pairs; ++bh) {
      HeadView v(qkv, n_head, bh);
      s.resize(v.t, v.t);
      T scale = T(1) / std::sqrt(T(v.d));
      T* row_lse = plse + bh * v.t;
      for (int64_t r0 = 0; r0 < v.t; r0 += kBlock) {
        const int64_t r1 = std::min(v.t, r0 + kBlock);
        scores(base, v, r0, r1, s.data());
        for (int64_t i = r0; i < r1; ++i) {
          auto row = s.row(i).head(i + 1).array();  // the causal part; Eigen's exp is vectorised
          T m = row.maxCoeff() * scale;
          row = (row * scale - m).exp();
          T sum = row.sum();
          row *= T(1) / sum;
          s.row(i).segment(i + 1, r1 - i - 1).setZero();
          row_lse[i] = m + std::log(sum);
        }
        // out rows [r0, r1) = P[r0:r1, 0:r1] v[0:r1]
        product(false, false, r1 - r0, v.d, r1, s.data() + r0 * v.t, v.t, base + v.qkv_offset + 2 * v.d,
                v.qkv_stride, pout + v.out_offset + r0 * v.out_stride, v.out_stride);
      }
    }
  }
}

template <typename T>
void backward_impl(const Tensor& qkv, const Tensor& out, const Tensor& lse, const Tensor& dout,
                   int64_t n_head, Tensor& dqkv) {
  int64_t pairs = qkv.size(0) * n_head;
  const T* base = qkv.data<T>();
  const T* pout = out.data<T>();
  const T* pdout = dout.data<T>();
  const T* plse = lse.data<T>();
  T* pd = dqkv.data<T>();
#pragma omp parallel
  {
    RowMatrix<T> p, dp;
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < pairs; ++bh) {
      HeadView v(qkv, n_head, bh);
      p.resize(v.t, v.t);
      dp.resize(v.t, v.t);
      const T* q = base + v.qkv_offset;
      const T* k = q + v.d;
      const T* val = q + 2 * v.d;
      const T* d_o = pdout + v.out_offset;
      auto o = matrix(pout + v.out_offset, v.t, v.d, v.out_stride);
      auto do_rows = matrix(d_o, v.t, v.d, v.out_stride);
      T* dq = pd + v.qkv_offset;
      T* dk = dq + v.d;
      T* dv = dq + 2 * v.d;
      const int64_t ld = v.qkv_stride, ldo = v.out_stride;
      T scale = T(1) / std::sqrt(T(v.d));
      for (int64_t r0 = 0; r0 < v.t; r0 += kBlock) {
        const int64_t r1 = std::min(v.t, r0 + kBlock), rows = r1 - r0;
        probabilities(base, v, plse + bh * v.t, r0, r1, p);
        // dP = dO v^T, then dS = P * (dP - rowsum(dO * O)) / sqrt(D), rows [r0, r1) x columns [0, r1)
        product(false, true, rows, r1, v.d, d_o + r0 * ldo, ldo, val, ld, dp.data() + r0 * v.t, v.t);
        for (int64_t i = r0; i < r1; ++i) {
          T di = o.row(i).dot(do_rows.row(i));
          dp.row(i).head(r1).array() = p.row(i).head(r1).array() * (dp.row(i).head(r1).array() - di) * scale;
        }
        // dq rows [r0, r1) = dS[r0:r1, 0:r1] k[0:r1]
        product(false, false, rows, v.d, r1, dp.data() + r0 * v.t, v.t, k, ld, dq + r0 * ld, ld);
      }
      // Columns block by block: column block [c0, c1) of P and dS is nonzero only in rows [c0, T).
      for (int64_t c0 = 0; c0 < v.t; c0 += kBlock) {
        const int64_t c1 = std::min(v.t, c0 + kBlock), below = v.t - c0;
        // dv rows [c0, c1) = P[c0:T, c0:c1]^T dO[c0:T]; dk rows [c0, c1) = dS[c0:T, c0:c1]^T q[c0:T]
        product(true, false, c1 - c0, v.d, below, p.data() + c0 * v.t + c0, v.t, d_o + c0 * ldo, ldo, dv + c0 * ld, ld);
        product(true, false, c1 - c0, v.d, below, dp.data() + c0 * v.t + c0, v.t, q + c0 * ld, ld, dk + c0 * ld, ld);
      }
    }
  }
}

}  // namespace

void attention_forward(const Tensor& qkv, int64_t n_head, Tensor& out, Tensor& lse, const Numerics&) {
  if (n_head == 0 || qkv.numel() == 0) return;
  detail::dispatch_float(qkv.dtype(), "attention", [&](auto tag) {
    forward_impl<decltype(tag)>(qkv, n_head, out, lse);
  });
}

void attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, int64_t n_head, Tensor& dqkv, const Numerics&) {
  if (n_head == 0 || qkv.numel() == 0) return;
  detail::dispatch_float(qkv.dtype(), "attention backward", [&](auto tag) {
    backward_impl<decltype(tag)>(qkv, out, lse, dout, n_head, dqkv);
  });
}

}  // namespace flextp::cpu

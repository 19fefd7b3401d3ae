#include "core/ops/attention.h"

#include <cmath>

#include "core/cpu/eigen.h"
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

// Scores S = q k^T / sqrt(D), then P = exp(S - lse) on and below the diagonal, 0 above.
template <typename T>
void probabilities(const T* base, const HeadView& v, const T* lse, RowMatrix<T>& p) {
  auto q = matrix(base + v.qkv_offset, v.t, v.d, v.qkv_stride);
  auto k = matrix(base + v.qkv_offset + v.d, v.t, v.d, v.qkv_stride);
  p.noalias() = q * k.transpose();
  T scale = T(1) / std::sqrt(T(v.d));
  for (int64_t i = 0; i < v.t; ++i) {
    p.row(i).head(i + 1) = (p.row(i).head(i + 1).array() * scale - lse[i]).exp().matrix();
    p.row(i).tail(v.t - i - 1).setZero();
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
      auto q = matrix(base + v.qkv_offset, v.t, v.d, v.qkv_stride);
      auto k = matrix(base + v.qkv_offset + v.d, v.t, v.d, v.qkv_stride);
      auto val = matrix(base + v.qkv_offset + 2 * v.d, v.t, v.d, v.qkv_stride);
      s.resize(v.t, v.t);
      s.noalias() = q * k.transpose();
      T scale = T(1) / std::sqrt(T(v.d));
      T* row_lse = plse + bh * v.t;
      for (int64_t i = 0; i < v.t; ++i) {
        auto row = s.row(i).head(i + 1).array();  // the causal part; Eigen's exp is vectorised
        T m = row.maxCoeff() * scale;
        row = (row * scale - m).exp();
        T sum = row.sum();
        row *= T(1) / sum;
        s.row(i).tail(v.t - i - 1).setZero();
        row_lse[i] = m + std::log(sum);
      }
      matrix(pout + v.out_offset, v.t, v.d, v.out_stride).noalias() = s * val;
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
      probabilities(base, v, plse + bh * v.t, p);
      auto q = matrix(base + v.qkv_offset, v.t, v.d, v.qkv_stride);
      auto k = matrix(base + v.qkv_offset + v.d, v.t, v.d, v.qkv_stride);
      auto val = matrix(base + v.qkv_offset + 2 * v.d, v.t, v.d, v.qkv_stride);
      auto o = matrix(pout + v.out_offset, v.t, v.d, v.out_stride);
      auto d_o = matrix(pdout + v.out_offset, v.t, v.d, v.out_stride);
      auto dq = matrix(pd + v.qkv_offset, v.t, v.d, v.qkv_stride);
      auto dk = matrix(pd + v.qkv_offset + v.d, v.t, v.d, v.qkv_stride);
      auto dv = matrix(pd + v.qkv_offset + 2 * v.d, v.t, v.d, v.qkv_stride);
      dv.noalias() = p.transpose() * d_o;
      dp.noalias() = d_o * val.transpose();
      // dS = P * (dP - rowsum(dO * O)), then the 1/sqrt(D) of the scores.
      T scale = T(1) / std::sqrt(T(v.d));
      for (int64_t i = 0; i < v.t; ++i) {
        T di = o.row(i).dot(d_o.row(i));
        dp.row(i).array() = p.row(i).array() * (dp.row(i).array() - di) * scale;
      }
      dq.noalias() = dp * k;
      dk.noalias() = dp.transpose() * q;
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

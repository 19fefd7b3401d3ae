// GPU kernels of core/ops/layernorm.h: one block per row for the statistics and dx, and the
// deterministic column sums of core/cuda/column_sums.cuh for dw and db.
#include "core/cuda/column_sums.cuh"
#include "core/cuda/launch.h"
#include "core/ops/layernorm.h"

namespace flextp::cuda {
namespace {

template <typename T>
__global__ void layernorm_forward_kernel(const T* x, const T* w, const T* b, T eps, T* y, T* mean, T* rstd,
                                         int64_t c) {
  const T* in = x + blockIdx.x * c;
  T s = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) s += in[j];
  T m = block_sum(s) / T(c);
  T v = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) v += (in[j] - m) * (in[j] - m);
  T rs = T(1) / sqrt(block_sum(v) / T(c) + eps);
  T* out = y + blockIdx.x * c;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) out[j] = (in[j] - m) * rs * w[j] + b[j];
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = m;
    rstd[blockIdx.x] = rs;
  }
}

template <typename T>
__global__ void layernorm_dx_kernel(const T* x, const T* w, const T* mean, const T* rstd,
                                    const T* dy, T* dx, int64_t c) {
  size_t r = blockIdx.x;
  const T* in = x + r * c;
  const T* g = dy + r * c;
  T m = mean[r], rs = rstd[r];
  T a = 0, bsum = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    T dxhat = g[j] * w[j];
    a += dxhat;
    bsum += dxhat * (in[j] - m) * rs;
  }
  T mean_dxhat = block_sum(a) / T(c);
  T mean_dxhat_xhat = block_sum(bsum) / T(c);
  T* out = dx + r * c;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    T xhat = (in[j] - m) * rs;
    out[j] = rs * (g[j] * w[j] - mean_dxhat - xhat * mean_dxhat_xhat);
  }
}

// dw sums dy * xhat over rows; db sums dy.
template <typename T>
struct GradTimesXhat {
  const T *x, *dy, *mean, *rstd;
  size_t cols;
  __device__ T operator()(size_t r, size_t j) const {
    return dy[r * cols + j] * (x[r * cols + j] - mean[r]) * rstd[r];
  }
};

}  // namespace

void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, Tensor& y,
                       Tensor& mean, Tensor& rstd) {
  int64_t c = x.size(-1), rows = c ? x.numel() / c : 0;
  if (rows == 0) return;
  dispatch_float(x.dtype(), "layernorm", [&](auto tag) {
    using T = decltype(tag);
    layernorm_forward_kernel<T><<<rows, kBlock, 0, stream()>>>(x.data<T>(), w.data<T>(), b.data<T>(), T(eps),
                                                               y.data<T>(), mean.data<T>(), rstd.data<T>(), c);
  });
  FLEXTP_CUDA_LAUNCHED("layernorm");
}

void layernorm_backward(const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                        const Tensor& dy, Tensor& dx, Tensor& dw, Tensor& db) {
  int64_t c = x.size(-1), rows = c ? x.numel() / c : 0;
  if (c == 0) return;
  if (rows == 0) {
    dw.zero_();
    db.zero_();
    return;
  }
  dispatch_float(x.dtype(), "layernorm backward", [&](auto tag) {
    using T = decltype(tag);
    layernorm_dx_kernel<T><<<rows, kBlock, 0, stream()>>>(x.data<T>(), w.data<T>(), mean.data<T>(),
                                                          rstd.data<T>(), dy.data<T>(), dx.data<T>(), c);
    FLEXTP_CUDA_LAUNCHED("layernorm backward");
    size_t cols = static_cast<size_t>(c);
    column_sums(GradTimesXhat<T>{x.data<T>(), dy.data<T>(), mean.data<T>(), rstd.data<T>(), cols},
                rows, cols, dw.data<T>(), x.device(), "layernorm backward");
    column_sums(MatrixEntry<T>{dy.data<T>(), cols}, rows, cols, db.data<T>(), x.device(),
                "layernorm backward");
  });
}

}  // namespace flextp::cuda

// GPU kernels of core/ops/elementwise.h: same-shape and bias (suffix) broadcasting.
#include "core/cuda/column_sums.cuh"
#include "core/cuda/launch.h"
#include "core/ops/elementwise.h"

namespace flextp::cuda {
namespace {

template <typename T>
__device__ T apply(BinaryOp op, T a, T b) {
  return op == BinaryOp::Add ? a + b : op == BinaryOp::Sub ? a - b : a * b;
}

// a has n elements; b repeats every m (m == n: same shape). swap: b is the full one.
template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* out, size_t n, size_t ma,
                              size_t mb) {
  FLEXTP_CUDA_GRID_LOOP(i, n) out[i] = apply(op, a[i % ma], b[i % mb]);
}

template <typename T>
__global__ void scale_kernel(const T* x, T s, T* out, size_t n) {
  FLEXTP_CUDA_GRID_LOOP(i, n) out[i] = x[i] * s;
}

template <typename T>
__global__ void axpy_kernel(T* dst, const T* src, T alpha, size_t n) {
  FLEXTP_CUDA_GRID_LOOP(i, n) dst[i] += alpha * src[i];
}

bool repeats_within(const Tensor& small, const Tensor& big) {
  return small.numel() > 0 && big.numel() % small.numel() == 0 &&
         broadcast_shape(small.shape(), big.shape()) == big.shape();
}

}  // namespace

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  size_t n = out.numel();
  if (n == 0) return;
  FLEXTP_CHECK((a.numel() == out.numel() || repeats_within(a, out)) &&
                   (b.numel() == out.numel() || repeats_within(b, out)),
               "cuda binary op: only same-shape and trailing (bias) broadcasting, got ", a.str(),
               " and ", b.str());
  dispatch_float(out.dtype(), "cuda binary op", [&](auto tag) {
    using T = decltype(tag);
    binary_kernel<<<grid_for(n), kBlock, 0, stream()>>>(op, a.data<T>(), b.data<T>(), out.data<T>(), n,
                                           a.numel(), b.numel());
  });
  FLEXTP_CUDA_LAUNCHED("elementwise");
}

void scale(const Tensor& x, double s, Tensor& out) {
  size_t n = x.numel();
  if (n == 0) return;
  dispatch_float(x.dtype(), "cuda scale", [&](auto tag) {
    using T = decltype(tag);
    scale_kernel<<<grid_for(n), kBlock, 0, stream()>>>(x.data<T>(), static_cast<T>(s), out.data<T>(), n);
  });
  FLEXTP_CUDA_LAUNCHED("elementwise");
}

void axpy(Tensor& dst, const Tensor& src, double alpha) {
  size_t n = dst.numel();
  if (n == 0) return;
  dispatch_float(dst.dtype(), "cuda add_inplace", [&](auto tag) {
    using T = decltype(tag);
    axpy_kernel<<<grid_for(n), kBlock, 0, stream()>>>(dst.data<T>(), src.data<T>(), static_cast<T>(alpha), n);
  });
  FLEXTP_CUDA_LAUNCHED("elementwise");
}

void sum_to(const Tensor& g, Tensor& out) {
  FLEXTP_CHECK(repeats_within(out, g), "cuda sum_to_shape: only trailing (bias) shapes, got ",
               out.str(), " from ", g.str());
  size_t cols = out.numel(), rows = g.numel() / cols;
  dispatch_float(g.dtype(), "cuda sum_to_shape", [&](auto tag) {
    using T = decltype(tag);
    column_sums(MatrixEntry<T>{g.data<T>(), cols}, rows, cols, out.data<T>(), g.device(), "sum_to_shape");
  });
}

}  // namespace flextp::cuda

// GPU kernels of core/ops/elementwise.h: same-shape and bias (suffix) operands, and the column
// sums that undo a bias's repetition in the backward.
#include "core/cuda/column_sums.cuh"
#include "core/cuda/launch.h"
#include "core/ops/elementwise.h"

namespace flextp::cuda {
namespace {

template <typename T>
__device__ T apply(BinaryOp op, T a, T b) {
  return op == BinaryOp::Add ? a + b : a * b;
}

// a repeats every ma elements of the output, b every mb (equal to n: the same shape; smaller: a
// suffix such as a bias).
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

}  // namespace

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  size_t n = out.numel();
  if (n == 0) return;
  dispatch_float(out.dtype(), "cuda binary op", [&](auto tag) {
    using T = decltype(tag);
    binary_kernel<<<grid_for(n), kBlock, 0, stream()>>>(op, a.data<T>(), b.data<T>(), out.data<T>(), n,
                                                        a.numel(), b.numel());
  });
  FLEXTP_CUDA_LAUNCHED("binary op");
}

void scale(const Tensor& x, double s, Tensor& out) {
  size_t n = x.numel();
  if (n == 0) return;
  dispatch_float(x.dtype(), "cuda scale", [&](auto tag) {
    using T = decltype(tag);
    scale_kernel<<<grid_for(n), kBlock, 0, stream()>>>(x.data<T>(), static_cast<T>(s), out.data<T>(), n);
  });
  FLEXTP_CUDA_LAUNCHED("scale");
}

void axpy(Tensor& dst, const Tensor& src, double alpha) {
  size_t n = dst.numel();
  if (n == 0) return;
  dispatch_float(dst.dtype(), "cuda add_inplace", [&](auto tag) {
    using T = decltype(tag);
    axpy_kernel<<<grid_for(n), kBlock, 0, stream()>>>(dst.data<T>(), src.data<T>(), static_cast<T>(alpha), n);
  });
  FLEXTP_CUDA_LAUNCHED("add_inplace");
}

void sum_to(const Tensor& g, Tensor& out) {
  size_t m = out.numel();
  if (m == 0) return;
  size_t rows = g.numel() / m;  // a bias gradient: the sums of the rows' columns
  dispatch_float(g.dtype(), "cuda sum_to_shape", [&](auto tag) {
    using T = decltype(tag);
    column_sums(MatrixEntry<T>{g.data<T>(), m}, rows, m, out.data<T>(), g.device(), "sum_to_shape");
  });
}

}  // namespace flextp::cuda

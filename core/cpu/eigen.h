#pragma once
// Eigen views of row-major tensor memory, shared by the CPU kernels.
// GCC 12.2's AVX-512 headers warn that their own _mm512_undefined_* values "may be used
// uninitialized" wherever Eigen's vector code is inlined into ours (GCC bug 105593, fixed in
// 12.3): a thousand lines of a build about the compiler's headers. GCC 12 honours a pragma at any
// place of the inlining chain, so silencing the warning for Eigen's own code, and only that,
// silences it; our code keeps every warning.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Core>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "core/tensor.h"

namespace flextp::cpu {

template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MatrixMap = Eigen::Map<RowMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using ConstMatrixMap = Eigen::Map<const RowMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using VectorMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstVectorMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// rows x cols matrix at p whose consecutive rows are `stride` elements apart.
template <typename T>
MatrixMap<T> matrix(T* p, int64_t rows, int64_t cols, int64_t stride) {
  return MatrixMap<T>(p, rows, cols, Eigen::OuterStride<>(stride));
}
template <typename T>
ConstMatrixMap<T> matrix(const T* p, int64_t rows, int64_t cols, int64_t stride) {
  return ConstMatrixMap<T>(p, rows, cols, Eigen::OuterStride<>(stride));
}

// C (+)= op(A) op(B) by Eigen, row-major with leading dimensions: op(a) is m x k, op(b) is k x n,
// a transposed operand stored as its transpose.
template <typename T>
void eigen_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                T* c, int64_t ldc, bool accumulate) {
  auto A = matrix(a, ta ? k : m, ta ? m : k, lda);
  auto B = matrix(b, tb ? n : k, tb ? k : n, ldb);
  auto C = matrix(c, m, n, ldc);
  auto store = [&](const auto& product) {
    if (accumulate)
      C.noalias() += product;
    else
      C.noalias() = product;
  };
  if (ta && tb)
    store(A.transpose() * B.transpose());
  else if (ta)
    store(A.transpose() * B);
  else if (tb)
    store(A * B.transpose());
  else
    store(A * B);
}

// The whole tensor as a flat array.
template <typename T>
VectorMap<T> flat(Tensor& t) {
  return VectorMap<T>(t.data<T>(), t.numel());
}
template <typename T>
ConstVectorMap<T> flat(const Tensor& t) {
  return ConstVectorMap<T>(t.data<T>(), t.numel());
}

}  // namespace flextp::cpu

#pragma once
// Eigen views of row-major tensor memory, shared by the CPU kernels.
#include <Eigen/Core>

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

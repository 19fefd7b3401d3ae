#pragma once
// Row-major GEMMs on the compute stream through cuBLAS, shared by matmul and attention.
#include <cstdint>

#include "core/numerics.h"

namespace flextp::cuda {

// A row-major matrix operand: element (r, c) of the stored matrix at ptr[r * ld + c]; batch item s
// starts `stride` elements after item s - 1.
template <typename T>
struct RowOperand {
  const T* ptr;
  int64_t ld;
  int64_t stride;
  bool trans;  // the product uses the stored matrix transposed
};

// cuBLAS is column-major, and a row-major matrix read as column-major is its transpose. So the
// row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T: the operands swap, each
// keeps its own transpose flag (the column-major view of a stored operand is already transposed
// once), m and n swap, and the leading dimensions stay the stored row lengths. Plain C++, so that
// tests on the CPU run this mapping against a reference column-major GEMM.
template <typename T>
struct ColumnMajorGemm {
  bool trans_a, trans_b;  // cuBLAS's transa, transb
  int64_t m, n, k;        // cuBLAS's m, n, k
  const T* a;
  int64_t lda, stride_a;
  const T* b;
  int64_t ldb, stride_b;
  int64_t ldc, stride_c;
};

template <typename T>
ColumnMajorGemm<T> as_column_major(int64_t m, int64_t n, int64_t k, RowOperand<T> a, RowOperand<T> b,
                                   int64_t ldc, int64_t stride_c) {
  return {b.trans, a.trans, n, m, k, b.ptr, b.ld, b.stride, a.ptr, a.ld, a.stride, ldc, stride_c};
}

// The operands of matmul (core/ops/matmul.h) on stored row-major tensors: a is [m, k] ([k, m] if
// ta), b is [k, n] ([n, k] if tb), c is [m, n]; each batch item follows the last.
template <typename T>
struct MatmulCall {
  RowOperand<T> a, b;
  int64_t ldc, stride_c;
};

template <typename T>
MatmulCall<T> matmul_call(const T* a, const T* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  return {{a, ta ? m : k, m * k, ta}, {b, tb ? k : n, k * n, tb}, n, m * n};
}

// Elements from an operand's first to its last, over `batch` items: what a copy of the operand
// in another type must hold for the GEMM to read it with the same ld and stride. op(operand) is
// rows x cols (the stored matrix is transposed when o.trans).
template <typename T>
int64_t operand_span(const RowOperand<T>& o, int64_t rows, int64_t cols, int64_t batch) {
  if (rows == 0 || cols == 0 || batch == 0) return 0;
  int64_t stored_rows = o.trans ? cols : rows, stored_cols = o.trans ? rows : cols;
  return (batch - 1) * o.stride + (stored_rows - 1) * o.ld + stored_cols;
}

// C[s] = alpha op(A[s]) op(B[s]) + beta C[s] for s < batch; op(A) is m x k, op(B) k x n, C is m x n
// row-major with leading dimension ldc. f32 takes the tensor cores of `precision`
// (core/numerics.h); for bf16 the operands are rounded to bf16 first. f64 ignores it.
template <typename T>
void gemm(int64_t m, int64_t n, int64_t k, RowOperand<T> a, RowOperand<T> b, T* c, int64_t ldc,
          int64_t stride_c, int64_t batch, T alpha, T beta, MatmulPrecision precision);

}  // namespace flextp::cuda

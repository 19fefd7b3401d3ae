#pragma once
// Row-major GEMMs on the compute stream through cuBLAS, shared by matmul and attention.
#include <cstdint>

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

// C[s] = alpha op(A[s]) op(B[s]) + beta C[s] for s < batch; op(A) is m x k, op(B) k x n, C is m x n
// row-major with leading dimension ldc. f32 uses TF32 tensor cores when allow_tf32() is set.
template <typename T>
void gemm(int64_t m, int64_t n, int64_t k, RowOperand<T> a, RowOperand<T> b, T* c, int64_t ldc,
          int64_t stride_c, int64_t batch, T alpha, T beta);

}  // namespace flextp::cuda

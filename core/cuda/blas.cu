// cuBLAS is column-major; a row-major matrix read as column-major is its transpose. So the row-major
// C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T, with the operands swapped.
#include <cublas_v2.h>

#include <array>
#include <mutex>
#include <type_traits>

#include "core/cuda/bf16.h"
#include "core/cuda/blas.h"
#include "core/cuda/launch.h"

namespace flextp::cuda {
namespace {

#define FLEXTP_CUBLAS(call)                                                                   \
  do {                                                                                        \
    cublasStatus_t flextp_s_ = (call);                                                        \
    FLEXTP_CHECK(flextp_s_ == CUBLAS_STATUS_SUCCESS, "cuBLAS call ", #call, " failed: ",      \
                 cublasGetStatusName(flextp_s_), " (", cublasGetStatusString(flextp_s_), ")"); \
  } while (0)

cublasHandle_t handle() {
  static std::array<cublasHandle_t, 64> handles{};
  static std::mutex mu;
  int device = 0;
  FLEXTP_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  if (!handles.at(device)) FLEXTP_CUBLAS(cublasCreate(&handles[device]));
  FLEXTP_CUBLAS(cublasSetStream(handles[device], stream()));
  return handles[device];
}

int as_int(int64_t v, const char* what) {
  FLEXTP_CHECK(v >= 0 && v <= INT32_MAX, "cuBLAS gemm: ", what, " = ", v, " does not fit an int");
  return static_cast<int>(v);
}

template <typename T>
struct Types;
template <>
struct Types<float> {
  static constexpr cudaDataType_t data = CUDA_R_32F;
  static cublasComputeType_t compute(MatmulPrecision precision) {
    return precision == MatmulPrecision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  }
};
template <>
struct Types<double> {
  static constexpr cudaDataType_t data = CUDA_R_64F;
  static cublasComputeType_t compute(MatmulPrecision) { return CUBLAS_COMPUTE_64F; }
};

// The f32 GEMM on bf16 tensor cores: each operand's span rounded to bf16 in scratch (same ld and
// stride), products summed in f32 into the f32 C.
void gemm_bf16(int64_t m, int64_t n, int64_t k, RowOperand<float> a, RowOperand<float> b, float* c, int64_t ldc,
               int64_t stride_c, int64_t batch, float alpha, float beta) {
  int device = 0;
  FLEXTP_CUDA_CHECK(cudaGetDevice(&device));
  Tensor a16 = bf16_copy(a.ptr, operand_span(a, m, k, batch), Device::cuda(device));
  Tensor b16 = bf16_copy(b.ptr, operand_span(b, k, n, batch), Device::cuda(device));
  ColumnMajorGemm<float> g = as_column_major(m, n, k, a, b, ldc, stride_c);  // g.a reads b, g.b reads a
  FLEXTP_CUBLAS(cublasGemmStridedBatchedEx(
      handle(), g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
      as_int(g.m, "m"), as_int(g.n, "n"), as_int(g.k, "k"), &alpha, b16.raw(), CUDA_R_16BF,
      as_int(g.lda, "lda"), g.stride_a, a16.raw(), CUDA_R_16BF, as_int(g.ldb, "ldb"), g.stride_b, &beta, c,
      CUDA_R_32F, as_int(g.ldc, "ldc"), g.stride_c, as_int(batch, "batch"), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT));
}

}  // namespace

template <typename T>
void gemm(int64_t m, int64_t n, int64_t k, RowOperand<T> a, RowOperand<T> b, T* c, int64_t ldc,
          int64_t stride_c, int64_t batch, T alpha, T beta, MatmulPrecision precision) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (k == 0) {  // an empty sum (a rank holding no units): C = beta C, and cuBLAS rejects ld 0
    FLEXTP_CHECK(beta == T(0) || beta == T(1), "cuBLAS gemm with k = 0 and beta ", beta);
    if (beta == T(0))
      for (int64_t s = 0; s < batch; ++s)
        FLEXTP_CUDA_CHECK(cudaMemset2DAsync(c + s * stride_c, ldc * sizeof(T), 0, n * sizeof(T), m, stream()));
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (precision == MatmulPrecision::bf16) return gemm_bf16(m, n, k, a, b, c, ldc, stride_c, batch, alpha, beta);
  }
  ColumnMajorGemm<T> g = as_column_major(m, n, k, a, b, ldc, stride_c);
  FLEXTP_CUBLAS(cublasGemmStridedBatchedEx(
      handle(), g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
      as_int(g.m, "m"), as_int(g.n, "n"), as_int(g.k, "k"), &alpha, g.a, Types<T>::data,
      as_int(g.lda, "lda"), g.stride_a, g.b, Types<T>::data, as_int(g.ldb, "ldb"), g.stride_b, &beta, c,
      Types<T>::data, as_int(g.ldc, "ldc"), g.stride_c, as_int(batch, "batch"), Types<T>::compute(precision),
      CUBLAS_GEMM_DEFAULT));
}

template void gemm<float>(int64_t, int64_t, int64_t, RowOperand<float>, RowOperand<float>, float*,
                          int64_t, int64_t, int64_t, float, float, MatmulPrecision);
template void gemm<double>(int64_t, int64_t, int64_t, RowOperand<double>, RowOperand<double>,
                           double*, int64_t, int64_t, int64_t, double, double, MatmulPrecision);

}  // namespace flextp::cuda

#pragma once
// A packed single-precision GEMM for AVX2 + FMA (the BLIS design: B packed into 16-column panels,
// A into 6-row panels, a 6 x 16 register-blocked micro-kernel), about 1.3x Eigen's on these
// CPUs. C (= or +=) op(A) op(B), all row-major with leading dimensions.
#include <cstdint>

namespace flextp::cpu {

// True when this build has the AVX2 kernel (otherwise callers use Eigen).
bool sgemm_available();

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate);

}  // namespace flextp::cpu

#pragma once
// A packed single-precision GEMM for AVX2 + FMA, or AVX-512 where the build has it (the BLIS
// design: B packed into NR-column panels, A into MR-row panels, an MR x NR register-blocked
// micro-kernel: 6 x 16 on AVX2, 12 x 32 on AVX-512). Both sum every element in the same order,
// so they agree bitwise. C (= or +=) op(A) op(B), all row-major with leading dimensions.
// Threads split C into rectangles (columns when it is short and wide, rows when tall), each
// packed and computed by one thread alone; any thread count gives the same bits.
#include <cstdint>

namespace flextp::cpu {

// True when this build has the AVX2 (or AVX-512) kernel (otherwise callers use Eigen).
bool sgemm_available();

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate);

}  // namespace flextp::cpu

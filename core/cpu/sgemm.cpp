#include "core/cpu/sgemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define FLEXTP_SGEMM_AVX2 1
#endif

namespace flextp::cpu {

#ifndef FLEXTP_SGEMM_AVX2
bool sgemm_available() { return false; }
void sgemm(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t,
           bool) {}
#else
bool sgemm_available() { return true; }

namespace {

constexpr int64_t MR = 6, NR = 16;
constexpr int64_t KC = 256, MC = 72, NC = 4096;

// Element (i, p) of op(A) and (p, j) of op(B).
inline float a_at(const float* a, int64_t lda, bool t, int64_t i, int64_t p) { return t ? a[p * lda + i] : a[i * lda + p]; }
inline float b_at(const float* b, int64_t ldb, bool t, int64_t p, int64_t j) { return t ? b[j * ldb + p] : b[p * ldb + j]; }

// op(A)[i0 : i0 + mc, p0 : p0 + kc] into MR-row panels: panel-major, then p, then the MR rows.
void pack_a(const float* a, int64_t lda, bool t, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  for (int64_t ir = 0; ir < mc; ir += MR) {
    int64_t rows = std::min(MR, mc - ir);
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t r = 0; r < MR; ++r) *out++ = r < rows ? a_at(a, lda, t, i0 + ir + r, p0 + p) : 0.0f;
  }
}

// One NR-column panel of op(B)[p0 : p0 + kc, j0 : j0 + cols]: p-major, NR columns each.
void pack_b_panel(const float* b, int64_t ldb, bool t, int64_t p0, int64_t kc, int64_t j0, int64_t cols, float* out) {
  if (!t && cols == NR) {
    for (int64_t p = 0; p < kc; ++p, out += NR) std::memcpy(out, b + (p0 + p) * ldb + j0, NR * sizeof(float));
    return;
  }
  if (t) {  // B stored [n, k]: each column of op(B) is a contiguous row of B
    for (int64_t cidx = 0; cidx < NR; ++cidx) {
      const float* src = b + (j0 + cidx) * ldb + p0;
      for (int64_t p = 0; p < kc; ++p) out[p * NR + cidx] = cidx < cols ? src[p] : 0.0f;
    }
    return;
  }
  for (int64_t p = 0; p < kc; ++p)
    for (int64_t cidx = 0; cidx < NR; ++cidx) *out++ = cidx < cols ? b[(p0 + p) * ldb + j0 + cidx] : 0.0f;
}

// acc (6 x 16) = sum_p A[:, p] B[p, :] over kc; then C tile (+)= acc.
void kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t rows, int64_t cols, bool add) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(), c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p, a += MR, b += NR) {
    __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 x = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(x, b0, c00);
    c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10);
    c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20);
    c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30);
    c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(x, b0, c40);
    c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(x, b0, c50);
    c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  alignas(32) float tile[MR * NR];
  _mm256_store_ps(tile + 0, c00), _mm256_store_ps(tile + 8, c01);
  _mm256_store_ps(tile + 16, c10), _mm256_store_ps(tile + 24, c11);
  _mm256_store_ps(tile + 32, c20), _mm256_store_ps(tile + 40, c21);
  _mm256_store_ps(tile + 48, c30), _mm256_store_ps(tile + 56, c31);
  _mm256_store_ps(tile + 64, c40), _mm256_store_ps(tile + 72, c41);
  _mm256_store_ps(tile + 80, c50), _mm256_store_ps(tile + 88, c51);
  for (int64_t r = 0; r < rows; ++r) {
    float* crow = c + r * ldc;
    const float* trow = tile + r * NR;
    if (cols == NR) {
      __m256 t0 = _mm256_load_ps(trow), t1 = _mm256_load_ps(trow + 8);
      if (add) {
        t0 = _mm256_add_ps(t0, _mm256_loadu_ps(crow));
        t1 = _mm256_add_ps(t1, _mm256_loadu_ps(crow + 8));
      }
      _mm256_storeu_ps(crow, t0);
      _mm256_storeu_ps(crow + 8, t1);
    } else {
      for (int64_t j = 0; j < cols; ++j) crow[j] = add ? crow[j] + trow[j] : trow[j];
    }
  }
}

struct Buffer {
  float* p = nullptr;
  explicit Buffer(size_t n) : p(static_cast<float*>(std::aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64))) {}
  ~Buffer() { std::free(p); }
};

}  // namespace

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
           float* c, int64_t ldc, bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  const int64_t panels_max = (std::min(NC, n) + NR - 1) / NR;
  Buffer bpack(static_cast<size_t>(KC) * panels_max * NR);
  const bool threaded = static_cast<double>(m) * n * k > 2e6;
  for (int64_t jc = 0; jc < n; jc += NC) {
    const int64_t nc = std::min(NC, n - jc), panels = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < k; pc += KC) {
      const int64_t kc = std::min(KC, k - pc);
      const bool add = accumulate || pc > 0;
      // Work items: (block of MC rows) x (chunk of kChunk panels), so that short and wide
      // products (the LM head: 256 rows) split as evenly as tall ones.
      constexpr int64_t kChunk = 8;
      const int64_t blocks = (m + MC - 1) / MC, chunks = (panels + kChunk - 1) / kChunk;
#pragma omp parallel if (threaded)
      {
#pragma omp for schedule(static)
        for (int64_t jr = 0; jr < panels; ++jr)
          pack_b_panel(b, ldb, tb, pc, kc, jc + jr * NR, std::min(NR, nc - jr * NR), bpack.p + jr * NR * kc);
        Buffer apack(static_cast<size_t>(MC) * KC);
        int64_t packed_block = -1;
#pragma omp for schedule(static)
        for (int64_t item = 0; item < blocks * chunks; ++item) {
          int64_t blk = item / chunks, chunk = item % chunks;
          int64_t ic = blk * MC, mc = std::min(MC, m - ic);
          if (blk != packed_block) {
            pack_a(a, lda, ta, ic, mc, pc, kc, apack.p);
            packed_block = blk;
          }
          for (int64_t jr = chunk * kChunk; jr < std::min(panels, (chunk + 1) * kChunk); ++jr)
            for (int64_t ir = 0; ir < mc; ir += MR)
              kernel(kc, apack.p + ir * kc, bpack.p + jr * NR * kc, c + (ic + ir) * ldc + jc + jr * NR, ldc,
                     std::min(MR, mc - ir), std::min(NR, nc - jr * NR), add);
        }
      }
    }
  }
}
#endif

}  // namespace flextp::cpu

#include "core/cpu/sgemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define FLEXTP_SGEMM_AVX2 1
#endif
#if defined(FLEXTP_SGEMM_AVX2) && defined(__AVX512F__)
#define FLEXTP_SGEMM_AVX512 1
#endif

namespace flextp::cpu {

#ifndef FLEXTP_SGEMM_AVX2
bool sgemm_available() { return false; }
void sgemm(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t,
           bool) {}
#else
bool sgemm_available() { return true; }

namespace {

// AVX-512 doubles the FMA width, so its tile is 12 x 32 (24 accumulators in 32 registers);
// AVX2's is 6 x 16 (12 of 16). Either way each element of C is one FMA chain over p in order,
// then added to C per KC panel, so the two give bitwise the same products.
#ifdef FLEXTP_SGEMM_AVX512
constexpr int64_t MR = 12, NR = 32;
#else
constexpr int64_t MR = 6, NR = 16;
#endif
// KC stays 256: it fixes where each sum is cut (and so the bits of every result). An MC x KC
// panel of A (264 KiB) sits in L2 beside a KC x NC block of B (1 MiB), in a 2 MiB L2.
constexpr int64_t KC = 256, MC = 264, NC = 1024;

// Element (i, p) of op(A).
inline float a_at(const float* a, int64_t lda, bool t, int64_t i, int64_t p) { return t ? a[p * lda + i] : a[i * lda + p]; }

// dst[c * ld_dst + r] = src[r * ld_src + c] for an 8 x 8 block (the unpack/shuffle/permute
// transpose): the transposed weights of a forward product pack at the speed of a copy.
void transpose_8x8(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
  __m256 r0 = _mm256_loadu_ps(src + 0 * ld_src), r1 = _mm256_loadu_ps(src + 1 * ld_src);
  __m256 r2 = _mm256_loadu_ps(src + 2 * ld_src), r3 = _mm256_loadu_ps(src + 3 * ld_src);
  __m256 r4 = _mm256_loadu_ps(src + 4 * ld_src), r5 = _mm256_loadu_ps(src + 5 * ld_src);
  __m256 r6 = _mm256_loadu_ps(src + 6 * ld_src), r7 = _mm256_loadu_ps(src + 7 * ld_src);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(dst + 0 * ld_dst, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(dst + 1 * ld_dst, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(dst + 2 * ld_dst, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(dst + 3 * ld_dst, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(dst + 4 * ld_dst, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(dst + 5 * ld_dst, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(dst + 6 * ld_dst, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(dst + 7 * ld_dst, _mm256_permute2f128_ps(s3, s7, 0x31));
}

// dst[c * ld_dst + r] = src[r * ld_src + c] for a 4 x 8 block (rows 8-11 of a 12-row panel).
void transpose_4x8(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
  __m256 r0 = _mm256_loadu_ps(src + 0 * ld_src), r1 = _mm256_loadu_ps(src + 1 * ld_src);
  __m256 r2 = _mm256_loadu_ps(src + 2 * ld_src), r3 = _mm256_loadu_ps(src + 3 * ld_src);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);  // columns 0, 4 | 1, 5
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);  // columns 2, 6 | 3, 7
  _mm_storeu_ps(dst + 0 * ld_dst, _mm256_castps256_ps128(s0));
  _mm_storeu_ps(dst + 1 * ld_dst, _mm256_castps256_ps128(s1));
  _mm_storeu_ps(dst + 2 * ld_dst, _mm256_castps256_ps128(s2));
  _mm_storeu_ps(dst + 3 * ld_dst, _mm256_castps256_ps128(s3));
  _mm_storeu_ps(dst + 4 * ld_dst, _mm256_extractf128_ps(s0, 1));
  _mm_storeu_ps(dst + 5 * ld_dst, _mm256_extractf128_ps(s1, 1));
  _mm_storeu_ps(dst + 6 * ld_dst, _mm256_extractf128_ps(s2, 1));
  _mm_storeu_ps(dst + 7 * ld_dst, _mm256_extractf128_ps(s3, 1));
}

// A whole MR-row panel of op(A) rows [i0, i0 + MR) by vector copies (transposed A) or 8 x 8 and
// 4 x 8 register transposes (A as stored); false when MR does not split that way (AVX2's 6).
// The scalar loop is as slow as a third of the micro-kernel's work on the small models' shapes.
bool pack_full_a_panel(const float* a, int64_t lda, bool t, int64_t i0, int64_t p0, int64_t kc, float* out) {
  if (MR % 4 != 0) return false;
  if (t) {  // op(A)(i, p) = a[p * lda + i]: the MR values of each p are contiguous
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t r = 0; r < MR; r += 4) _mm_storeu_ps(out + p * MR + r, _mm_loadu_ps(a + (p0 + p) * lda + i0 + r));
    return true;
  }
  const float* src = a + i0 * lda + p0;
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8) {
    int64_t r = 0;
    for (; r + 8 <= MR; r += 8) transpose_8x8(src + r * lda + p, lda, out + p * MR + r, MR);
    for (; r < MR; r += 4) transpose_4x8(src + r * lda + p, lda, out + p * MR + r, MR);
  }
  for (; p < kc; ++p)
    for (int64_t r = 0; r < MR; ++r) out[p * MR + r] = src[r * lda + p];
  return true;
}

// op(A)[i0 : i0 + mc, p0 : p0 + kc] into MR-row panels: panel-major, then p, then the MR rows.
void pack_a(const float* a, int64_t lda, bool t, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  for (int64_t ir = 0; ir < mc; ir += MR) {
    int64_t rows = std::min(MR, mc - ir);
    if (rows == MR && pack_full_a_panel(a, lda, t, i0 + ir, p0, kc, out)) {
      out += MR * kc;
      continue;
    }
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
  if (t && cols == NR) {  // B stored [n, k]: transpose 8 x 8 blocks in registers
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8)
      for (int64_t c0 = 0; c0 < NR; c0 += 8)
        transpose_8x8(b + (j0 + c0) * ldb + p0 + p, ldb, out + p * NR + c0, NR);
    for (; p < kc; ++p)
      for (int64_t cidx = 0; cidx < NR; ++cidx) out[p * NR + cidx] = b[(j0 + cidx) * ldb + p0 + p];
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

#ifndef FLEXTP_SGEMM_AVX512
// acc (6 x 16) = sum_p A[:, p] B[p, :] over kc; then C tile (+)= acc. Never inlined: inside
// the threaded loop GCC spills the accumulators (half the speed on small shapes).
__attribute__((noinline)) void kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t rows, int64_t cols, bool add) {
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
#else
// acc (12 x 32) = sum_p A[:, p] B[p, :] over kc; then C tile (+)= acc. The A values are
// broadcast, the arrays stay in registers once unrolled. Never inlined: inside the threaded loop
// GCC spills the accumulators (half the speed on small shapes).
__attribute__((noinline)) void kernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t rows, int64_t cols, bool add) {
  __m512 acc[MR][2];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p, a += MR, b += NR) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m512 x = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
    }
  }
  if (cols == NR) {
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      if (r >= rows) break;
      float* crow = c + r * ldc;
      __m512 t0 = acc[r][0], t1 = acc[r][1];
      if (add) {
        t0 = _mm512_add_ps(t0, _mm512_loadu_ps(crow));
        t1 = _mm512_add_ps(t1, _mm512_loadu_ps(crow + 16));
      }
      _mm512_storeu_ps(crow, t0);
      _mm512_storeu_ps(crow + 16, t1);
    }
    return;
  }
  // A partial tile (the right edge): masked loads and stores of the columns that exist.
  const __mmask16 m0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFF : (1u << cols) - 1);
  const __mmask16 m1 = static_cast<__mmask16>(cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (1u << (cols - 16)) - 1);
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
    if (r >= rows) break;
    float* crow = c + r * ldc;
    __m512 t0 = acc[r][0], t1 = acc[r][1];
    if (add) {
      t0 = _mm512_add_ps(t0, _mm512_maskz_loadu_ps(m0, crow));
      t1 = _mm512_add_ps(t1, _mm512_maskz_loadu_ps(m1, crow + 16));
    }
    _mm512_mask_storeu_ps(crow, m0, t0);
    _mm512_mask_storeu_ps(crow + 16, m1, t1);
  }
}
#endif

// A packing buffer that lives as long as its thread and only grows: a fresh 1 MiB allocation per
// call is mmapped and page-faulted in again every time, which costs as much as a small product.
float* thread_buffer(int slot, size_t floats) {
  struct Grown {
    float* p = nullptr;
    size_t n = 0;
    ~Grown() { std::free(p); }
  };
  thread_local Grown buffers[2];
  Grown& g = buffers[slot];
  if (g.n < floats) {
    std::free(g.p);
    g.p = static_cast<float*>(std::aligned_alloc(64, ((floats * sizeof(float) + 63) / 64) * 64));
    g.n = floats;
  }
  return g.p;
}

// One thread's rectangle of C: rows [i0, i1), columns [j0, j1).
struct Block {
  int64_t i0, i1, j0, j1;
};

// The rectangle of thread `tid` of `threads`: the grid of tm x tn parts (tm * tn = threads) that
// gives the fewest micro-tiles to the busiest thread, with its packing (each thread packs the A
// rows and B columns of its own rectangle) as the tie-break: short and wide products (256 rows
// by 3072) split their columns, tall and narrow ones their rows. Cuts fall on whole tiles.
Block thread_block(int64_t m, int64_t n, int tid, int threads) {
  const int64_t row_tiles = (m + MR - 1) / MR, col_tiles = (n + NR - 1) / NR;
  int64_t best_tm = 1;
  double best_cost = 1e300;
  for (int64_t tm = 1; tm <= threads; ++tm) {
    if (threads % tm != 0) continue;
    const int64_t tn = threads / tm;
    const int64_t rt = (row_tiles + tm - 1) / tm, ct = (col_tiles + tn - 1) / tn;
    // A micro-tile is MR * NR FMAs per k; packing a row or column is about 4 of them per k.
    const double cost = static_cast<double>(rt * ct) * MR * NR + 4.0 * (rt * MR + ct * NR);
    if (cost < best_cost) best_cost = cost, best_tm = tm;
  }
  const int64_t tm = best_tm, tn = threads / tm, ti = tid / tn, tj = tid % tn;
  return {std::min(m, ti * row_tiles / tm * MR), std::min(m, (ti + 1) * row_tiles / tm * MR),
          std::min(n, tj * col_tiles / tn * NR), std::min(n, (tj + 1) * col_tiles / tn * NR)};
}

// C[blk] (+)= op(A) op(B) over the block, on this thread alone. Loops: NC columns, then KC-deep
// slices in order (so every element of C is the same sum as before: one FMA chain per slice,
// added to C slice by slice), then MC rows whose A panel stays in L2, then each NR-column panel
// of B, packed on first use and kept in L1 while every MR-row tile of the block runs over it.
void gemm_block(bool ta, bool tb, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                int64_t ldc, bool accumulate, const Block& blk) {
  if (blk.i0 >= blk.i1 || blk.j0 >= blk.j1) return;
  float* apack = thread_buffer(0, static_cast<size_t>(MC) * KC);
  float* bpack = thread_buffer(1, static_cast<size_t>(KC) * NC);
  for (int64_t jc = blk.j0; jc < blk.j1; jc += NC) {
    const int64_t nc = std::min(NC, blk.j1 - jc), panels = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < k; pc += KC) {
      const int64_t kc = std::min(KC, k - pc);
      const bool add = accumulate || pc > 0;
      for (int64_t ic = blk.i0; ic < blk.i1; ic += MC) {
        const int64_t mc = std::min(MC, blk.i1 - ic);
        pack_a(a, lda, ta, ic, mc, pc, kc, apack);
        for (int64_t jr = 0; jr < panels; ++jr) {
          const int64_t cols = std::min(NR, nc - jr * NR);
          float* bp = bpack + jr * NR * kc;
          if (ic == blk.i0) pack_b_panel(b, ldb, tb, pc, kc, jc + jr * NR, cols, bp);
          for (int64_t ir = 0; ir < mc; ir += MR)
            kernel(kc, apack + ir * kc, bp, c + (ic + ir) * ldc + jc + jr * NR, ldc, std::min(MR, mc - ir), cols, add);
        }
      }
    }
  }
}

}  // namespace

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
           float* c, int64_t ldc, bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  // One parallel region per call and no barrier inside: each thread packs and computes its own
  // rectangle of C. The split is made from the threads that really run (1 inside an outer
  // parallel region), never from the number asked for.
  const bool threaded = static_cast<double>(m) * n * k > 2e6;
  if (!threaded) {  // without entering OpenMP at all: attention calls this for each of its small blocks
    gemm_block(ta, tb, k, a, lda, b, ldb, c, ldc, accumulate, thread_block(m, n, 0, 1));
    return;
  }
#pragma omp parallel
  {
    int tid = 0, threads = 1;
#ifdef _OPENMP
    tid = omp_get_thread_num();
    threads = omp_get_num_threads();
#endif
    gemm_block(ta, tb, k, a, lda, b, ldb, c, ldc, accumulate, thread_block(m, n, tid, threads));
  }
}
#endif

}  // namespace flextp::cpu

#include "core/fma_peak.h"

#include <algorithm>

#include "core/timer.h"

#ifdef _OPENMP
#include <omp.h>
#endif
// GCC 12 warns inside its own AVX-512 header (_mm512_undefined_ps) when it is inlined into the
// loops below: a warning about the compiler's header, silenced for this file alone.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace flextp {

namespace {

// FLOPs done by one thread: reps x 12 chains x lanes x 2.
template <typename V, typename Fma, typename Set>
double fma_chains(long reps, Fma fma, Set set, int lanes) {
  V a0 = set(1.0f), a1 = set(1.1f), a2 = set(1.2f), a3 = set(1.3f), a4 = set(1.4f), a5 = set(1.5f);
  V a6 = set(1.6f), a7 = set(1.7f), a8 = set(1.8f), a9 = set(1.9f), a10 = set(2.0f), a11 = set(2.1f);
  const V m = set(0.9999999f), k = set(1e-7f);
  for (long r = 0; r < reps; ++r) {
    a0 = fma(a0, m, k), a1 = fma(a1, m, k), a2 = fma(a2, m, k), a3 = fma(a3, m, k);
    a4 = fma(a4, m, k), a5 = fma(a5, m, k), a6 = fma(a6, m, k), a7 = fma(a7, m, k);
    a8 = fma(a8, m, k), a9 = fma(a9, m, k), a10 = fma(a10, m, k), a11 = fma(a11, m, k);
    // Keeps the compiler from folding the loop: the chains depend on the loop's own results.
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
    __asm__ volatile("" : "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
  }
  volatile float sink = 0;
  V s = fma(a0, a1, fma(a2, a3, fma(a4, a5, fma(a6, a7, fma(a8, a9, fma(a10, a11, m))))));
  sink = reinterpret_cast<float*>(&s)[0];
  (void)sink;
  return static_cast<double>(reps) * 12 * lanes * 2;
}

double one_thread_flops(long reps, const std::string& isa) {
#if defined(__AVX512F__)
  if (isa == "AVX-512")
    return fma_chains<__m512>(
        reps, [](__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); },
        [](float x) { return _mm512_set1_ps(x); }, 16);
#endif
#if defined(__AVX2__) && defined(__FMA__)
  if (isa == "AVX2")
    return fma_chains<__m256>(
        reps, [](__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); },
        [](float x) { return _mm256_set1_ps(x); }, 8);
#endif
  (void)isa;
  float a[12] = {1, 1.1f, 1.2f, 1.3f, 1.4f, 1.5f, 1.6f, 1.7f, 1.8f, 1.9f, 2.0f, 2.1f};
  for (long r = 0; r < reps; ++r)
    for (float& x : a) x = x * 0.9999999f + 1e-7f;
  volatile float sink = a[0] + a[11];
  (void)sink;
  return static_cast<double>(reps) * 12 * 2;
}

}  // namespace

std::vector<std::string> fma_isas() {
  std::vector<std::string> out;
#if defined(__AVX512F__)
  out.push_back("AVX-512");
#endif
#if defined(__AVX2__) && defined(__FMA__)
  out.push_back("AVX2");
#endif
  if (out.empty()) out.push_back("scalar");
  return out;
}

FmaPeak measure_fma_peak(const std::string& isa, int threads) {
  const long reps = 200'000;  // well under a millisecond: some runs see no preemption
  double total = 0;
  auto best_rate = [&] {
    double best = 0;
    for (int i = 0; i < 80; ++i) {
      double start = now_ms();
      double flops = one_thread_flops(reps, isa);
      best = std::max(best, flops / (now_ms() - start) / 1e6);
    }
    return best;
  };
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : total)
  total += best_rate();
#else
  total = best_rate();
#endif
  return {isa, threads, total};
}

FmaPeak fma_peak(int threads) {
  FmaPeak best;
  for (const std::string& isa : fma_isas()) {
    FmaPeak p = measure_fma_peak(isa, threads);
    if (p.gflops > best.gflops) best = p;
  }
  return best;
}

}  // namespace flextp

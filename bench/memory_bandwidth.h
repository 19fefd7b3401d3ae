#pragma once
// The machine's main-memory bandwidth, measured STREAM-style: copy (a = b) and triad
// (a = b + s c) over float arrays far larger than the caches, split over the threads as
// parallel_for splits a step's elementwise passes. Memory-bound passes (AdamW's update, the
// gradients' copies) are reported against it, as GEMMs are against the FMA peak: together the two
// give the fastest step a machine allows (bench_train_throughput's bound).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench/timer.h"
#include "core/error.h"

namespace flextp::bench {

struct MemoryBandwidth {
  int threads = 1;
  double copy_gbs = 0;   // bytes read + written (8 per element), GB/s (1e9 bytes)
  double triad_gbs = 0;  // 12 bytes per element
};

// Each figure is the fastest of `reps` passes (other work only slows a pass down). Stores are
// counted once, as STREAM counts them (a write-allocate's read is not added).
inline MemoryBandwidth measure_memory_bandwidth(int threads, int64_t n = int64_t{96} << 20, int reps = 20) {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  std::unique_ptr<float, Free> a(static_cast<float*>(std::aligned_alloc(64, bytes))),
      b(static_cast<float*>(std::aligned_alloc(64, bytes))), c(static_cast<float*>(std::aligned_alloc(64, bytes)));
  FLEXTP_CHECK(a && b && c, "memory bandwidth: could not allocate three arrays of ", bytes >> 20, " MiB");
  float *pa = a.get(), *pb = b.get(), *pc = c.get();
  // Each pass runs `body` over [lo, hi) per thread, with the same split for every pass, so the
  // pages a thread first touched stay its own.
  auto pass = [&](auto body) {
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      body(n * t / nt, n * (t + 1) / nt);
    }
#else
    body(int64_t{0}, n);
#endif
  };
  pass([&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) pa[i] = 0.f, pb[i] = 1.f, pc[i] = 2.f;
  });
  auto fastest = [&](auto body) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
      double start = now_ms();
      pass(body);
      best = std::min(best, now_ms() - start);
    }
    return best / 1000;
  };
  MemoryBandwidth out;
  out.threads = threads;
  double copy_s = fastest([&](int64_t lo, int64_t hi) {
    float* __restrict x = pa;
    const float* __restrict y = pb;
    for (int64_t i = lo; i < hi; ++i) x[i] = y[i];
  });
  double triad_s = fastest([&](int64_t lo, int64_t hi) {
    float* __restrict x = pa;
    const float* __restrict y = pb;
    const float* __restrict z = pc;
    for (int64_t i = lo; i < hi; ++i) x[i] = y[i] + 0.5f * z[i];
  });
  out.copy_gbs = 8.0 * static_cast<double>(n) / copy_s / 1e9;
  out.triad_gbs = 12.0 * static_cast<double>(n) / triad_s / 1e9;
  volatile float sink = pa[n / 2];
  (void)sink;
  return out;
}

}  // namespace flextp::bench

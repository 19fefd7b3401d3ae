#pragma once
// Splits [0, n) into contiguous chunks over the OpenMP threads when the work is big enough to pay
// for the threads; runs inline otherwise (and inside an already-parallel region).
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace flextp {

inline int num_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& body) {
#ifdef _OPENMP
  int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads > 1 && n >= 2 * grain) {
    int64_t chunks = n / grain < threads ? n / grain : threads;
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
    for (int64_t c = 0; c < chunks; ++c) body(n * c / chunks, n * (c + 1) / chunks);
    return;
  }
#endif
  (void)grain;
  if (n > 0) body(int64_t{0}, n);
}

}  // namespace flextp

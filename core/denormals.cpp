#include "core/denormals.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace flextp {
namespace {

#if defined(__SSE2__)
constexpr unsigned kFlushToZero = 1u << 15, kDenormalsAreZero = 1u << 6;
constexpr unsigned kBoth = kFlushToZero | kDenormalsAreZero;
#endif

// Runs `body` on the calling thread and once on each OpenMP thread of a full team (the pool's
// threads persist between parallel regions, so what they set stays set).
template <typename F>
void on_every_thread(F&& body) {
  body();
#ifdef _OPENMP
#pragma omp parallel num_threads(omp_get_max_threads())
  body();
#endif
}

}  // namespace

bool flush_denormals(bool on) {
#if defined(__SSE2__)
  on_every_thread([on] { _mm_setcsr(on ? _mm_getcsr() | kBoth : _mm_getcsr() & ~kBoth); });
  return true;
#else
  (void)on;
  return false;
#endif
}

bool denormals_flushed() {
#if defined(__SSE2__)
  int all = 1;
  on_every_thread([&all] {
    int mine = (_mm_getcsr() & kBoth) == kBoth;
#ifdef _OPENMP
#pragma omp atomic update
#endif
    all &= mine;
  });
  return all == 1;
#else
  return false;
#endif
}

}  // namespace flextp

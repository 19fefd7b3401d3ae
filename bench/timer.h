#pragma once
// Median wall time of repeated runs, for benchmarks (tests never time anything).
#include <algorithm>
#include <vector>

#include "core/timer.h"

namespace flextp::bench {

using flextp::median;
using flextp::now_ms;

template <typename F>
double median_ms(F&& f, int warmup = 2, int reps = 7) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    double start = now_ms();
    f();
    t.push_back(now_ms() - start);
  }
  return median(t);
}

// Fastest of `reps` runs: on a shared machine other work only ever slows a run down, so this is
// the closest to what the code does on an idle one (reported beside the median, never instead).
template <typename F>
double best_ms(F&& f, int warmup = 2, int reps = 30) {
  for (int i = 0; i < warmup; ++i) f();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    double start = now_ms();
    f();
    best = std::min(best, now_ms() - start);
  }
  return best;
}

}  // namespace flextp::bench

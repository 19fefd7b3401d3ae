#pragma once
// Median wall time of repeated runs, for benchmarks (tests never time anything).
#include <algorithm>
#include <chrono>
#include <vector>

namespace flextp::bench {

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

template <typename F>
double median_ms(F&& f, int warmup = 2, int reps = 7) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    double start = now_ms();
    f();
    t.push_back(now_ms() - start);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace flextp::bench

#pragma once
// Wall time in milliseconds on the steady clock (step times, the watchdog, benchmarks), and the
// median that judges a sample of them.
#include <algorithm>
#include <chrono>
#include <vector>

namespace flextp {

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// The middle value; the mean of the two middle values of an even sample; 0 of an empty one.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace flextp

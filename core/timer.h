#pragma once
// Wall time in milliseconds on the steady clock: step times, the watchdog, benchmarks.
#include <chrono>

namespace flextp {

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace flextp

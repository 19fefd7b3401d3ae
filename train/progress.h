#pragma once
// What `train` shows of its progress. Everywhere (a terminal, a log file, CI, under mpirun) a
// logged step's line ends with the MFU, the step out of the total and the time left, and the run
// ends with a summary: its wall time, tokens/s and mean MFU.
#include <cstdint>
#include <functional>
#include <string>

#include "nn/mfu.h"

namespace flextp {

// Seconds on a monotonic clock; tests inject their own.
using Clock = std::function<double()>;
double monotonic_seconds();

class Progress {
 public:
  Progress(int64_t total_steps, int64_t tokens_per_step, Clock clock = monotonic_seconds);
  // Before this run's first step, which follows step `done` (a resumed checkpoint's; else 0).
  void start(int64_t done, const MfuBasis& mfu);
  // Global step `step` (counted from 1) took `ms`.
  void step(int64_t step, double ms);
  // What a logged step's line ends with: " | MFU 3.2% | 21 of 500 steps, 1m02s left" (no MFU
  // when the peak is unknown).
  std::string suffix() const;
  // The run's last line: "done: 500 steps in 4m10s; 3m58s in the steps at 8533 tok/s, MFU
  // 3.2%"; empty when no step ran.
  std::string summary() const;

 private:
  // "MFU 3.2%" for `tokens` in `seconds`; empty when the peak is unknown.
  std::string mfu_text(double tokens, double seconds) const;
  std::string time_left() const;

  int64_t total_, tokens_per_step_;
  Clock clock_;
  MfuBasis mfu_;
  double start_s_ = 0;
  int64_t done_ = 0, last_ = 0;
  double last_ms_ = 0, ms_sum_ = 0;
};

}  // namespace flextp

#pragma once
// What `train` shows while it runs: on a terminal, one line rewritten every step with the step,
// loss, speed and the time left; elsewhere (a log file, CI, under mpirun) only the plain log lines.
#include <cstdint>

namespace flextp {

class Progress {
 public:
  Progress(bool lead, int64_t total_steps);
  // After global step `step` (counted from 1) took `ms`.
  void step(int64_t step, double loss, double ms);
  // Erases the live line before a log line is printed.
  void clear_line();

 private:
  bool live_;
  int64_t total_;
  double ms_sum_ = 0;
  int64_t ms_count_ = 0;
  bool shown_ = false;
};

}  // namespace flextp

#include "train/progress.h"

#include "core/timer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace flextp {

namespace {

// "1h02m" from an hour on, "4m05s" from a minute, else "12.5s".
std::string duration_text(double seconds) {
  char text[32];
  if (seconds < 59.95) {
    std::snprintf(text, sizeof text, "%.1fs", std::max(seconds, 0.0));
    return text;
  }
  long s = std::lround(seconds), h = s / 3600, m = s / 60 % 60;
  if (h > 0)
    std::snprintf(text, sizeof text, "%ldh%02ldm", h, m);
  else
    std::snprintf(text, sizeof text, "%ldm%02lds", m, s % 60);
  return text;
}

}  // namespace

double monotonic_seconds() { return now_ms() / 1000; }

Progress::Progress(int64_t total_steps, int64_t tokens_per_step, Clock clock)
    : total_(total_steps),
      tokens_per_step_(tokens_per_step),
      clock_(std::move(clock)) {}

void Progress::start(int64_t done, const MfuBasis& mfu) {
  mfu_ = mfu;
  done_ = last_ = done;
  start_s_ = clock_();
}

void Progress::step(int64_t step, double ms) {
  last_ = step, last_ms_ = ms;
  ms_sum_ += ms;
}

std::string Progress::mfu_text(double tokens, double seconds) const {
  if (mfu_.peak.flops_per_s <= 0 || seconds <= 0) return "";
  char text[32];
  std::snprintf(text, sizeof text, "MFU %.1f%%", 100 * tokens * mfu_.flops_per_token / seconds / mfu_.peak.flops_per_s);
  return text;
}

// From this run's pace so far on the wall clock: evaluations, checkpoints and samples included.
std::string Progress::time_left() const {
  const int64_t ran = last_ - done_;
  if (ran <= 0) return "?";
  return duration_text((clock_() - start_s_) / static_cast<double>(ran) * static_cast<double>(total_ - last_));
}

std::string Progress::suffix() const {
  std::string mfu = mfu_text(static_cast<double>(tokens_per_step_), last_ms_ / 1000);
  return (mfu.empty() ? "" : " | " + mfu) + " | " + std::to_string(last_) + " of " + std::to_string(total_) +
         " steps, " + time_left() + " left";
}

std::string Progress::summary() const {
  const int64_t ran = last_ - done_;
  if (ran <= 0) return "";
  const double tokens = static_cast<double>(tokens_per_step_ * ran), step_s = ms_sum_ / 1000;
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.0f tok/s", tokens / step_s);
  std::string mfu = mfu_text(tokens, step_s);
  return "done: " + std::to_string(ran) + " step" + (ran == 1 ? "" : "s") + " in " +
         duration_text(clock_() - start_s_) + "; " + duration_text(step_s) + " in the steps at " + rate +
         (mfu.empty() ? "" : ", mean " + mfu);
}

}  // namespace flextp

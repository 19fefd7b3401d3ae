#include "parallel/balance/link_watch.h"

#include <algorithm>

namespace flextp {

LinkWatch::LinkWatch(int window, double jump, double floor_ms)
    : alpha_(2.0 / (window + 1)), jump_(jump), floor_ms_(floor_ms) {}

bool LinkWatch::high(double ms, double rest_ms) const {
  return ms > usual_ * (1 + jump_) && ms > usual_ + std::max(floor_ms_, 0.1 * rest_ms);
}

LinkWatch::Event LinkWatch::record(double ms, double rest_ms) {
  ++samples_;
  if (samples_ <= 2) {  // the first step sets up connections: the second is the first level
    usual_ = ms;
    return Event::None;
  }
  bool disagrees = high(ms, rest_ms) != slow_;
  run_ = disagrees ? run_ + 1 : 0;
  if (run_ >= 2) {  // two in a row: a change, not a blip
    slow_ = !slow_, run_ = 0, since_ = samples_ - 1;
    return slow_ ? Event::Slowed : Event::Recovered;
  }
  // The usual level follows the quiet steps only: neither a blip nor a slowdown moves it.
  if (!slow_ && !disagrees) usual_ += alpha_ * (ms - usual_);
  return Event::None;
}

}  // namespace flextp

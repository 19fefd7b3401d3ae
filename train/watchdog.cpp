#include "train/watchdog.h"

#include <chrono>
#include <cstdio>
#include <unistd.h>

#include "core/timer.h"

namespace flextp {

Watchdog::Watchdog(double timeout_s, int rank) : timeout_s_(timeout_s), rank_(rank) {
  last_ms_ = now_ms();
  if (timeout_s_ <= 0) return;
  thread_ = std::thread([this] {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      double idle_s = (now_ms() - last_ms_) / 1000.0;
      if (idle_s > timeout_s_ && !paused_) {
        // The peers are gone or stuck: a collective would wait forever. Nothing can be saved
        // safely from here; the last checkpoint stays as it was.
        std::fprintf(stderr,
                     "train: error (rank %d): no progress for %.0f s in step %lld: another rank has died or "
                     "hangs (--rank-timeout %.0f); giving up\n",
                     rank_, idle_s, (long long)step_.load(), timeout_s_);
        std::fflush(stderr);
        ::_exit(3);
      }
    }
  });
}

Watchdog::~Watchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Watchdog::beat(int64_t step) {
  last_ms_ = now_ms();
  step_ = step;
}

void Watchdog::pause() { paused_ = true; }

void Watchdog::resume() {
  last_ms_ = now_ms();
  paused_ = false;
}

}  // namespace flextp

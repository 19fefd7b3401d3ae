#pragma once
// Guarding a long multi-rank run: a watchdog that ends a rank whose peers stopped answering (a
// killed rank must not leave the others waiting forever). train/fault_hook.h injects the faults
// it is tested with.
#include <atomic>
#include <cstdint>
#include <thread>

namespace flextp {

class Watchdog {
 public:
  // timeout_s 0: off (a single process has no peers to wait for).
  Watchdog(double timeout_s, int rank);
  ~Watchdog();
  // Progress: called at the start of every step and after each evaluation batch.
  void beat(int64_t step);
  // Across a save, an export or a sample the rank that writes can take longer than the timeout
  // while the others wait for it: the watchdog is off from pause() until resume(), which counts
  // as a beat.
  void pause();
  void resume();

 private:
  double timeout_s_;
  int rank_;
  std::atomic<double> last_ms_{0};
  std::atomic<int64_t> step_{0};
  std::atomic<bool> stop_{false}, paused_{false};
  std::thread thread_;
};

}  // namespace flextp

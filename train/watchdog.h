#pragma once
// Guarding a long multi-rank run: a watchdog that ends a rank whose peers stopped answering (a
// killed rank must not leave the others waiting forever), and the fault injection the tests use
// to poison a step's loss (--fault-nan-steps), kill a rank in the middle of a step (--fault-kill
// RANK:STEP) or stop it there for good, alive but silent (--fault-hang RANK:STEP: what a lost node
// looks like to its peers).
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

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

// Every injected fault behind the one hook the training step calls, after its forward pass.
class FaultHook {
 public:
  FaultHook() = default;  // injects nothing
  // Steps count from 1; kill and hang are RANK:STEP or empty, checked against `ranks`.
  FaultHook(std::vector<int64_t> nan_steps, std::string kill, std::string hang, int rank, int ranks);
  // The loss the step goes on with (NaN at a poisoned step); kills or stops this rank where a
  // spec names it and `step`.
  double after_forward(int64_t step, double loss) const;

 private:
  std::vector<int64_t> nan_steps_;
  std::string kill_, hang_;
  int rank_ = 0;
};

}  // namespace flextp

#pragma once
// Guarding a long multi-rank run: a watchdog that ends a rank whose peers stopped answering (a
// killed rank must not leave the others waiting forever), and the fault injection the tests use
// to kill a rank in the middle of a step (--fault-kill RANK:STEP) or stop it there for good, alive
// but silent (--fault-hang RANK:STEP: what a lost node looks like to its peers).
#include <atomic>
#include <cstdint>
#include <string>
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

// Checks a --fault-kill / --fault-hang spec against the number of ranks; `flag` names it.
void check_fault_spec(const std::string& flag, const std::string& spec, int ranks);
// Sends this process `signal` (SIGKILL, SIGSTOP) when the spec names this rank and step.
void fault_point(const std::string& spec, int rank, int64_t step, int signal);

}  // namespace flextp

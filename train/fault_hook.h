#pragma once
// The fault injection the tests use: poison a step's loss (--fault-nan-steps), kill a rank in the
// middle of a step (--fault-kill RANK:STEP) or stop it there for good, alive but silent
// (--fault-hang RANK:STEP: what a lost node looks like to its peers).
#include <cstdint>
#include <string>
#include <vector>

namespace flextp {

// Every injected fault behind the one hook the training step calls, after its forward pass.
class FaultHook {
 public:
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

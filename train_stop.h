#pragma once
// Stopping a run by signal without losing it. The first SIGINT or SIGTERM asks the run to stop
// after the current step (with several ranks, it or the next): every rank stops at the same step (the signal may reach only some of
// them under mpirun), the checkpoint is saved when --save is given, and train exits with
// 128 + the signal's number. A second signal ends the process at once (the signal's default
// action). SIGXFSZ (a file grown past `ulimit -f`) is ignored: the write then fails with EFBIG and
// the save says so, instead of the process dying without a word.
#include <cstdint>
#include <memory>

#include "parallel/comm/communicator.h"

namespace flextp {

// Installs the handlers. A SIGINT or SIGTERM the process inherited as ignored (nohup, a shell's
// background job) stays ignored.
void install_stop_signals();

// The signal that asked this rank to stop (0: none yet).
int stop_signal();

// Every rank of a job stops after the same step. Each rank's request travels in a non-blocking
// all-reduce started after one step and completed after the next: by then every rank has passed
// the first (the step's own collectives saw to it), so the agreement adds no wait and no sync
// point of its own to the step, whose timing the balancer reads. A signal stops the run after
// the step during which it came or the one after.
class StopAgreement {
 public:
  explicit StopAgreement(Communicator& world) : world_(world) {}
  // Every rank, after each step: the signal that stops every rank now (the largest number asked
  // on any rank), or 0 to go on.
  int after_step();
  // Every rank, when the loop has ended without a stop: completes the all-reduce in flight.
  void finish();

 private:
  Communicator& world_;
  Tensor flag_;
  std::unique_ptr<PendingReduce> pending_;
};

// "SIGINT", "SIGTERM", else "signal N".
const char* signal_name(int signal);

// Testing: FLEXTP_FAULT_SIGNAL=RANK:STEP:SIGNAL raises SIGNAL in that rank after step STEP
// (counted from 1), as if it came from outside at that moment.
void fault_signal(int rank, int64_t step);

}  // namespace flextp

#pragma once
// Faults the tests inject through the environment, where no flag reaches (inside a file write, a
// save, a snapshot, a signal at a step): every FLEXTP_FAULT_* variable is read here and nowhere
// else, so a reader finds every fault flextp can be made to suffer in one place. The faults a
// flag injects (--fault-nan-steps, --fault-kill, --fault-hang) are train/fault_hook.h's.
#include <cstdint>

namespace flextp::injected_fault {

// FLEXTP_FAULT_KILL_IN_WRITE=N: SIGKILL halfway through the Nth atomic file write of the process
// (core/temp_files.h); FLEXTP_FAULT_KILL_AFTER_WRITE=N: right after the Nth is in place.
void kill_in_write(int write);
void kill_after_write(int write);

// FLEXTP_FAULT_SLOW_SAVE_MS=N: a checkpoint's writer waits N ms before the weights (after the
// optimizer state), as a slow disk would: saves slower than train's --rank-timeout.
void slow_save();

// FLEXTP_FAULT_SLOW_SNAPSHOT=STEP:MS: the snapshot of STEP is held open MS ms, its own shard
// written and no copy sent yet (a host lost during a snapshot). Returns the ms (0: no fault).
int64_t slow_snapshot_ms(int64_t step);

// FLEXTP_FAULT_SIGNAL=RANK:STEP:SIGNAL: rank RANK raises SIGNAL as step STEP begins (a signal
// delivered mid-run, at a known step).
void signal_at(int rank, int64_t step);

}  // namespace flextp::injected_fault

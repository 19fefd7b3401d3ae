#pragma once
// Denormal (subnormal) floats, below 1.2e-38 in f32, are computed by x86 CPUs in microcode, at a
// small fraction of the normal speed. Training meets them where values decay (AdamW's moments of
// tiny gradients, exp in the tails of softmax and GELU) and gains nothing from them: every serious
// CPU trainer flushes them to zero, and so does flextp. The switch is per thread (the MXCSR
// register's flush-to-zero and denormals-are-zero bits), so it is set on the calling thread and on
// every OpenMP thread; threads created later inherit it from the thread that creates them.

namespace flextp {

// Turns FTZ and DAZ on (or off) on the calling thread and every OpenMP thread. Returns false where
// the CPU has no such switch (not x86): there nothing changes.
bool flush_denormals(bool on = true);

// Whether FTZ and DAZ are on, on the calling thread and on every OpenMP thread.
bool denormals_flushed();

}  // namespace flextp

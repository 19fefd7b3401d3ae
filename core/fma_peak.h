#pragma once
// The machine's f32 FMA peak, measured: every thread runs independent FMA chains that stay in
// registers (no loads or stores), enough of them to cover the FMA latency on two ports. The CPU's
// roofline for compute: train's MFU and the benchmarks' GEMM shares are of this number.
#include <string>
#include <vector>

namespace flextp {

struct FmaPeak {
  std::string isa;  // the widest vector FMA this build has ("AVX-512", "AVX2", "scalar")
  int threads = 1;
  double gflops = 0;
};

// The ISAs this build can run, widest first.
std::vector<std::string> fma_isas();

// GFLOP/s of `threads` threads running the register-resident loop at once: inside one parallel
// region each thread times many short runs and keeps its fastest, and the peak is the sum of the
// threads' best rates. On a shared machine other work only ever slows a run down (or delays a
// thread's wake-up, which timing the whole region would count), so the fastest runs are the
// closest to what the cores can do; a median would understate the peak and overstate MFU.
FmaPeak measure_fma_peak(const std::string& isa, int threads);

// The peak that MFU is measured against: the widest ISA's, at `threads` threads (about 0.1 s).
FmaPeak fma_peak(int threads);

}  // namespace flextp

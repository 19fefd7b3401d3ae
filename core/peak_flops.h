#pragma once
// What MFU (model FLOPs utilisation) is measured against: the peak FLOP/s of the hardware a job
// trains on. On the CPU, the f32 FMA peak measured at start (core/fma_peak.h); on a GPU, its
// datasheet's dense peak for the matmul precision, looked up by the name CUDA gives it.
#include <optional>
#include <string>

#include "core/dtype.h"
#include "core/fma_peak.h"
#include "core/numerics.h"

namespace flextp {

struct PeakFlops {
  double flops_per_s = 0;  // 0: unknown (a GPU missing from the table), so no MFU
  std::string what;        // where the number comes from, for the log
};

// The dense datasheet peak in TFLOP/s of a GPU named as CUDA names it ("NVIDIA H200"), for f32
// matmuls at `precision` (f32 on the CUDA cores, TF32 or bf16 on the tensor cores); nothing for
// a GPU missing from the table.
std::optional<double> gpu_peak_tflops(const std::string& name, MatmulPrecision precision);

// A job's peak from its rank 0's hardware, every host alike with `ranks_here` of the `ranks`
// ranks on it. Ranks on one host share its `host_cores` (or `host_gpus`): threads beyond the
// cores add no FLOPs, and two ranks on one GPU have one GPU's peak.
PeakFlops cpu_job_peak(const FmaPeak& rank0, int ranks, int ranks_here, int host_cores);
PeakFlops gpu_job_peak(const std::string& gpu_name, MatmulPrecision precision, int ranks, int ranks_here, int host_gpus);

// The peak of a job of `ranks` ranks on `device`, as rank 0 sees it: on the CPU measured now at
// this process's threads (about 0.1 s), on a GPU from the table. How many ranks share this host
// comes from the launcher (OpenMPI's or MPICH's); without one, all of them.
PeakFlops job_peak(Device device, MatmulPrecision precision, int ranks);

}  // namespace flextp

#include "core/peak_flops.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/cuda/cuda_runtime_api.h"
#include "core/parallel_for.h"

namespace flextp {

namespace {

struct GpuPeaks {
  const char* name;
  double f32, tf32, bf16;  // TFLOP/s, dense (the datasheets' sparse figures are twice these)
};

// Only names whose numbers were read from NVIDIA's datasheets: a guess would make a wrong MFU.
const GpuPeaks kGpus[] = {
    {"NVIDIA H200", 67.0, 494.7, 989.4},         {"NVIDIA H100 80GB HBM3", 67.0, 494.7, 989.4},
    {"NVIDIA H100 PCIe", 51.2, 378.0, 756.0},    {"NVIDIA A100-SXM4-80GB", 19.5, 156.0, 312.0},
    {"NVIDIA A100-SXM4-40GB", 19.5, 156.0, 312.0}, {"NVIDIA A100-PCIE-40GB", 19.5, 156.0, 312.0},
    {"NVIDIA A100 80GB PCIe", 19.5, 156.0, 312.0},
};

// The ranks the launcher started on this host (OpenMPI, then MPICH's Hydra); `ranks` without one.
int ranks_on_this_host(int ranks) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(name))
      if (int n = std::atoi(v); n > 0) return std::min(n, ranks);
  return ranks;
}

std::string one_decimal(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

}  // namespace

std::optional<double> gpu_peak_tflops(const std::string& name, MatmulPrecision precision) {
  for (const GpuPeaks& g : kGpus)
    if (name == g.name)
      return precision == MatmulPrecision::bf16 ? g.bf16 : precision == MatmulPrecision::tf32 ? g.tf32 : g.f32;
  return std::nullopt;
}

PeakFlops cpu_job_peak(const FmaPeak& rank0, int ranks, int ranks_here, int host_cores) {
  const int hosts = (ranks + ranks_here - 1) / ranks_here;
  const int busy = std::min(ranks_here * rank0.threads, std::max(host_cores, 1));  // threads that add FLOPs
  const double per_thread = rank0.gflops / rank0.threads;
  PeakFlops p{per_thread * 1e9 * busy * hosts, ""};
  p.what = rank0.isa + " f32 FMA peak measured at start, " + one_decimal(per_thread) + " GFLOP/s" + " x " +
           std::to_string(busy * hosts) + " thread(s)";
  if (busy < ranks_here * rank0.threads)
    p.what += " (" + std::to_string(ranks_here * rank0.threads) + " on " + std::to_string(host_cores) + " cores)";
  return p;
}

PeakFlops gpu_job_peak(const std::string& gpu_name, MatmulPrecision precision, int ranks, int ranks_here,
                       int host_gpus) {
  std::optional<double> tflops = gpu_peak_tflops(gpu_name, precision);
  if (!tflops) return {0, gpu_name + ": not in core/peak_flops.cpp's table of datasheet peaks"};
  const int hosts = (ranks + ranks_here - 1) / ranks_here;
  const int gpus = std::min(ranks_here, std::max(host_gpus, 1)) * hosts;
  return {*tflops * 1e12 * gpus, gpu_name + " " + precision_name(precision) + " dense datasheet peak, " +
                                     one_decimal(*tflops) + " TFLOP/s" + " x " + std::to_string(gpus) + " GPU(s)"};
}

PeakFlops job_peak(Device device, MatmulPrecision precision, int ranks) {
  const int here = ranks_on_this_host(ranks);
  if (device.is_cuda())
    return gpu_job_peak(cuda::device_name(device.index), precision, ranks, here, cuda::device_count());
  return cpu_job_peak(fma_peak(num_threads()), ranks, here, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace flextp

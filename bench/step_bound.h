#pragma once
// The best MFU a training step can reach on this machine: its model FLOPs at the GEMMs' share of
// the FMA peak, plus the passes over every parameter's state that no GEMM hides (AdamW's update
// and the gradient's writes), at the measured memory bandwidth. Everything else a step does
// (attention, LayerNorm, GELU, cross-entropy, threads waiting) only lowers it further.
namespace flextp::bench {

// Bytes a training step moves per parameter outside the GEMMs' compute, as flextp does it
// (float32): AdamW reads the value, gradient, m and v and writes the value, m and v (28); the
// weight-gradient GEMM writes the gradient (4). core/autograd.cpp keeps that product as the
// leaf's gradient instead of copying it, which would add a read and a write (8).
constexpr double kAdamWBytesPerParam = 28;
constexpr double kGradientBytesPerParam = 4;

struct StepBound {
  double compute_s = 0;  // model FLOPs at `gemm_share` of the peak
  double memory_s = 0;   // the per-parameter passes at the bandwidth
  double mfu = 0;        // model FLOPs / (compute_s + memory_s) / peak
};

inline StepBound step_bound(double flops_per_step, double peak_gflops, double gemm_share, double params,
                            double bandwidth_gbs) {
  StepBound b;
  b.compute_s = flops_per_step / (peak_gflops * 1e9 * gemm_share);
  b.memory_s = params * (kAdamWBytesPerParam + kGradientBytesPerParam) / (bandwidth_gbs * 1e9);
  b.mfu = flops_per_step / (peak_gflops * 1e9) / (b.compute_s + b.memory_s);
  return b;
}

}  // namespace flextp::bench

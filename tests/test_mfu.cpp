// MFU's two numbers: the model FLOPs of training per token, counted by hand for a tiny model,
// and the peak they are measured against (the GPU table by name, the CPU's measured peak shared
// by the ranks on a host).
#include <doctest/doctest.h>

#include "nn/gpt.h"
#include "nn/mfu.h"
#include "nn/units.h"
#include "parallel/tp/partition.h"

using namespace flextp;

namespace {

// C 8, one layer, 16 tokens padded to 128 rows, 4 positions.
GPTConfig tiny() {
  GPTConfig c;
  c.vocab_size = 16, c.n_positions = 4, c.n_layer = 1, c.n_head = 2, c.n_embd = 8, c.mlp_unit = 8;
  return c;
}

}  // namespace

TEST_CASE("the model FLOPs of training per token: 6 per parameter plus 12 L T C, counted by hand") {
  // wte 128 x 8 (the padded rows are multiplied in the LM head too) + wpe 4 x 8 + ln_f 2 x 8, and
  // one block: ln_1 and ln_2 2 x 8 each, c_attn 8 x 24 + 24, attn c_proj 8 x 8 + 8, c_fc 8 x 32 + 32,
  // mlp c_proj 32 x 8 + 8.
  const int64_t block = 16 + 16 + (192 + 24) + (64 + 8) + (256 + 32) + (256 + 8);
  const int64_t parameters = 128 * 8 + 4 * 8 + 16 + block;
  REQUIRE(parameters == 1944);
  GPT model(tiny());
  CHECK(model_parameters(model) == parameters);
  // 6 x 1944 + 12 x 1 layer x T 4 x C 8; T is the trained sequence, not the position table.
  CHECK(training_flops_per_token(model, 4) == 6 * 1944 + 12 * 1 * 4 * 8);
  CHECK(training_flops_per_token(model, 2) == 6 * 1944 + 12 * 1 * 2 * 8);
  // A rank holding half the units counts the whole model, as the job's tokens/s are the whole
  // model's.
  GPTConfig c = tiny();
  Partition halves = Partition::even(unit_groups(c), 2);
  GPT half(c, LocalUnits::of_rank(c, halves, 1));
  CHECK(model_parameters(half) == parameters);
}

TEST_CASE("a GPU's peak is its datasheet's dense figure for the matmul precision, by CUDA's name") {
  CHECK(gpu_peak_tflops("NVIDIA H200", MatmulPrecision::bf16) == 989.4);
  CHECK(gpu_peak_tflops("NVIDIA H200", MatmulPrecision::tf32) == 494.7);
  CHECK(gpu_peak_tflops("NVIDIA H200", MatmulPrecision::f32) == 67.0);
  CHECK(gpu_peak_tflops("NVIDIA A100-SXM4-80GB", MatmulPrecision::bf16) == 312.0);
  CHECK_FALSE(gpu_peak_tflops("NVIDIA H200 NVL", MatmulPrecision::bf16));  // another part: no guess
  CHECK_FALSE(gpu_peak_tflops("NVIDIA GeForce RTX 4090", MatmulPrecision::bf16));
  // A job's: one GPU per rank, but ranks sharing a GPU have its peak once.
  CHECK(gpu_job_peak("NVIDIA H200", MatmulPrecision::bf16, 8, 4, 4).flops_per_s == 8 * 989.4e12);
  CHECK(gpu_job_peak("NVIDIA H200", MatmulPrecision::bf16, 2, 2, 1).flops_per_s == 989.4e12);
  PeakFlops unknown = gpu_job_peak("NVIDIA GeForce RTX 4090", MatmulPrecision::bf16, 1, 1, 1);
  CHECK(unknown.flops_per_s == 0);
  CHECK(unknown.what.find("NVIDIA GeForce RTX 4090") != std::string::npos);
}

TEST_CASE("a CPU job's peak: rank 0's measured peak per thread, times the threads its hosts' cores can run") {
  const FmaPeak rank0{"AVX2", 2, 100.0};  // 50 GFLOP/s a thread
  CHECK(cpu_job_peak(rank0, 1, 1, 8).flops_per_s == 100e9);
  CHECK(cpu_job_peak(rank0, 2, 2, 8).flops_per_s == 200e9);  // 4 threads on 8 cores
  // 4 threads on 2 cores (mpirun --oversubscribe): the cores' peak, not the threads'.
  PeakFlops crowded = cpu_job_peak(rank0, 2, 2, 2);
  CHECK(crowded.flops_per_s == 100e9);
  CHECK(crowded.what.find("4 on 2 cores") != std::string::npos);
  CHECK(cpu_job_peak(rank0, 4, 2, 8).flops_per_s == 400e9);  // two hosts alike
  // Measured here: some peak, whatever the machine's load.
  CHECK(job_peak(Device::cpu(), MatmulPrecision::f32, 1).flops_per_s > 0);
}

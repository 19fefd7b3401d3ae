// bench/ops: speed of the core ops on the CPU at GPT-2 sizes.
//  - the machine's f32 FMA peak (core/fma_peak.h), per ISA the build has, at 1 thread and at
//    the threads used, and each GEMM's share of it; beside it main memory's bandwidth
//    (bench/memory_bandwidth.h), which bounds the passes over every parameter's state;
//  - matmul GFLOP/s through flextp's tensor layer (which runs the packed AVX2 kernel of
//    core/cpu/sgemm.cpp for big f32 products) next to a bare Eigen GEMM of the same size;
//  - forward + backward ms of the fused attention, LayerNorm and cross-entropy at B = 4,
//    T = 64..256, C = 768 (12 heads; vocabulary 50257 for the cross-entropy).
//  - the fused ops beside the unfused ones they replace, forward + backward, alternated and each
//    the median of its rounds (`bench_ops fusions` runs only these).
//  - `bench_ops gemm`: the peak, then every product of a GPT-2 small step at B 4, T 64, and the
//    MFU that step could reach at best (bench/step_bound.h).
//  The GEMMs are GPT-2 small's (B 4, T 128) and the default `make train` model's (2048 rows,
//  K and N of 128-512), forward and both backward products.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/memory_bandwidth.h"
#include "bench/step_bound.h"
#include "bench/timer.h"
#include "core/autograd.h"
#include "core/cpu/eigen.h"
#include "core/fma_peak.h"
#include "core/ops/attention.h"
#include "core/ops/bias_gelu.h"
#include "core/ops/elementwise.h"
#include "core/ops/layernorm.h"
#include "core/ops/matmul.h"
#include "core/ops/reduce.h"
#include "core/parallel_for.h"
#include "nn/mfu.h"
#include "parallel/tp/vocab_parallel.h"

using namespace flextp;

namespace {

double g_peak = 0;       // GFLOP/s that the GEMMs' shares are of
double g_triad_gbs = 0;  // main memory's bandwidth at the threads used

// op(a) [m, k] by op(b) [k, n]; trans_a is the weight-gradient product (activations^T by grads).
// Returns the fastest run's GFLOP/s.
double bench_matmul(int64_t m, int64_t k, int64_t n, bool trans_b, bool trans_a = false) {
  Tensor a = trans_a ? Tensor::randn({k, m}, 1) : Tensor::randn({m, k}, 1);
  Tensor b = trans_b ? Tensor::randn({n, k}, 2) : Tensor::randn({k, n}, 2);
  double flops = 2.0 * m * n * k;
  cpu::RowMatrix<float> ea = cpu::matrix(a.data<float>(), a.size(0), a.size(1), a.size(1));
  cpu::RowMatrix<float> eb = cpu::matrix(b.data<float>(), b.size(0), b.size(1), b.size(1));
  cpu::RowMatrix<float> ec(m, n);
  auto eigen = [&] {
    if (trans_a)
      ec.noalias() = ea.transpose() * eb;
    else if (trans_b)
      ec.noalias() = ea * eb.transpose();
    else
      ec.noalias() = ea * eb;
  };
  auto layer = [&] { matmul(a, b, trans_a, trans_b); };
  // Alternate the two and keep each one's best median: the first runs warm the caches and clocks.
  double t_layer = 1e30, t_eigen = 1e30;
  for (int round = 0; round < 2; ++round) {
    t_eigen = std::min(t_eigen, bench::median_ms(eigen));
    t_layer = std::min(t_layer, bench::median_ms(layer));
  }
  double ours = flops / t_layer / 1e6, best = flops / bench::best_ms(layer) / 1e6;
  std::printf("matmul %5lldx%-5lld%s x %5lldx%-5lld%s  flextp %6.1f GFLOP/s %3.0f%%, best %6.1f %3.0f%% of peak   "
              "bare Eigen %6.1f   ratio %.2f\n",
              (long long)a.size(0), (long long)a.size(1), trans_a ? "^T" : "  ", (long long)b.size(0),
              (long long)b.size(1), trans_b ? "^T" : "  ", ours, 100 * ours / g_peak, best, 100 * best / g_peak,
              flops / t_eigen / 1e6, t_eigen / t_layer);
  return best;
}

template <typename Forward>
void bench_fused(const char* name, int64_t t, Forward&& forward, Tensor& input) {
  double fwd = bench::median_ms([&] {
    NoGradGuard ng;
    forward();
  });
  double both = bench::median_ms([&] {
    input.zero_grad();
    sum(forward()).backward();
  });
  std::printf("%-14s B=4 T=%-4lld forward %8.2f ms   forward+backward %8.2f ms\n", name,
              (long long)t, fwd, both);
}


// The median of `rounds` medians of f and of g, alternated (a shared machine's load drifts).
template <typename F, typename G>
void bench_pair(const char* what, F&& unfused, G&& fused, int rounds = 5) {
  std::vector<double> a, b;
  for (int r = 0; r < rounds; ++r) {
    a.push_back(bench::median_ms(unfused));
    b.push_back(bench::median_ms(fused));
  }
  double ta = bench::median(a), tb = bench::median(b);
  std::printf("%-44s unfused %8.3f ms   fused %8.3f ms   %.2fx\n", what, ta, tb, ta / tb);
}

// Forward + backward of each fusion the model uses, at the default model's sizes (2048 rows,
// C 128) and GPT-2 small's (512 rows, C 768).
void bench_fusions() {
  struct Size {
    const char* name;
    int64_t rows, c;
  };
  for (Size z : {Size{"default", 2048, 128}, Size{"gpt2-small", 512, 768}}) {
    std::printf("%s (%lld rows, C %lld)\n", z.name, (long long)z.rows, (long long)z.c);
    // bias + GELU: the add written out and a GELU pass over it (a zero bias), against one pass.
    Tensor x = Tensor::randn({z.rows, 4 * z.c}, 1), bias = Tensor::randn({4 * z.c}, 2);
    Tensor no_bias = Tensor::zeros({4 * z.c});
    x.set_requires_grad(true);
    bias.set_requires_grad(true);
    bench_pair("  add(x, bias), GELU -> bias_gelu", [&] { sum(bias_gelu(add(x, bias), no_bias)).backward(); },
               [&] { sum(bias_gelu(x, bias)).backward(); });
  }
}

}  // namespace

// Every product of one GPT-2 small training step at B 4, T 64 (256 rows; the vocabulary padded to
// 50304 as the model pads it): each linear's forward, input gradient and weight gradient. Then the
// step's bound (bench/step_bound.h): its model FLOPs at the products' combined fastest share of
// the peak, plus the per-parameter passes at the measured memory bandwidth.
void bench_gpt2_small_step_gemms(int threads) {
  const int64_t rows = 256, c = 768, vocab = 50304, layers = 12, seq = 64;
  struct Linear {
    const char* name;
    int64_t in, out;
    bool column;  // weight stored [out, in] (x W^T); a row-parallel one is stored [in, out]
  };
  std::printf("GPT-2 small, B 4 T 64 (%lld rows): forward, input gradient, weight gradient\n", (long long)rows);
  double gemm_flops = 0, gemm_s = 0;  // one step's products at their fastest runs
  auto timed = [&](double best_gflops, int64_t m, int64_t k, int64_t n, double times) {
    gemm_flops += times * 2.0 * m * k * n;
    gemm_s += times * 2.0 * m * k * n / (best_gflops * 1e9);
  };
  for (Linear l : {Linear{"qkv", c, 3 * c, true}, Linear{"attn proj", c, c, false}, Linear{"mlp fc", c, 4 * c, true},
                   Linear{"mlp proj", 4 * c, c, false}, Linear{"lm head", c, vocab, true}}) {
    std::printf("%s\n", l.name);
    const double times = l.out == vocab ? 1 : static_cast<double>(layers);
    if (l.column) {
      timed(bench_matmul(rows, l.in, l.out, true), rows, l.in, l.out, times);          // x [rows, in] by W [out, in]^T
      timed(bench_matmul(rows, l.out, l.in, false), rows, l.out, l.in, times);         // g [rows, out] by W [out, in]
      timed(bench_matmul(l.out, rows, l.in, false, true), l.out, rows, l.in, times);   // g^T [out, rows] by x [rows, in]
    } else {
      timed(bench_matmul(rows, l.in, l.out, false), rows, l.in, l.out, times);         // x [rows, in] by W [in, out]
      timed(bench_matmul(rows, l.out, l.in, true), rows, l.out, l.in, times);          // g [rows, out] by W [in, out]^T
      timed(bench_matmul(l.in, rows, l.out, false, true), l.in, rows, l.out, times);   // x^T [in, rows] by g [rows, out]
    }
  }
  // GPT-2 small's parameters: per block the four linears, their biases and two LayerNorms; the
  // tied embedding (padded), the positions and the final LayerNorm.
  const double params = static_cast<double>(layers * (12 * c * c + 13 * c) + vocab * c + seq * c + 2 * c);
  const double flops = 256 * training_flops_per_token(params, layers, seq, c);
  const double share = gemm_flops / gemm_s / (g_peak * 1e9);
  std::printf("\n");
  for (double s : {1.0, share}) {
    bench::StepBound b = bench::step_bound(flops, g_peak, s, params, g_triad_gbs);
    std::printf("step bound, GEMMs at %3.0f%% of the peak%s: %.0f ms of FLOPs + %.0f ms for %.0f M parameters x %.0f "
                "bytes at the triad's bandwidth = %.1f%% MFU (%.0f tok/s)\n",
                100 * s, s == 1.0 ? "              " : " (their fastest)", 1e3 * b.compute_s, 1e3 * b.memory_s,
                params / 1e6, bench::kAdamWBytesPerParam + bench::kGradientBytesPerParam, 100 * b.mfu,
                256 / (b.compute_s + b.memory_s));
  }
}

void measure_peak(int threads) {
  for (const std::string& isa : fma_isas())
    for (int t : {1, threads}) {
      if (t == 1 && threads == 1 && g_peak > 0) continue;
      FmaPeak p = measure_fma_peak(isa, t);
      std::printf("f32 FMA peak, %-7s %d thread%s %7.1f GFLOP/s\n", isa.c_str(), t, t == 1 ? ": " : "s:", p.gflops);
      if (t == threads) g_peak = std::max(g_peak, p.gflops);
    }
  for (int t : {1, threads}) {
    if (t == 1 && threads == 1 && g_triad_gbs > 0) continue;
    bench::MemoryBandwidth bw = bench::measure_memory_bandwidth(t);
    std::printf("memory bandwidth, %d thread%s  copy %5.1f GB/s, triad %5.1f GB/s\n", t, t == 1 ? ": " : "s:",
                bw.copy_gbs, bw.triad_gbs);
    if (t == threads) g_triad_gbs = bw.triad_gbs;
  }
  std::printf("GEMM shares below are of %.1f GFLOP/s (the best at %d threads)\n\n", g_peak, threads);
}

int main(int argc, char** argv) {
  const int threads = num_threads();
  if (argc > 1 && std::strcmp(argv[1], "fusions") == 0) {
    std::printf("flextp bench/ops fusions: %d threads, float32\n", threads);
    bench_fusions();
    return 0;
  }
  std::printf("flextp bench/ops: %d threads, float32, median of 7 runs (GEMMs: and the fastest of 30)\n\n", threads);
  measure_peak(threads);
  if (argc > 1 && std::strcmp(argv[1], "gemm") == 0) {
    bench_gpt2_small_step_gemms(threads);
    return 0;
  }
  const int64_t c = 768, rows = 512;  // GPT-2 small: B 4, T 128
  std::printf("GPT-2 small (B*T = %lld, C = %lld): forward, then the backward products\n", (long long)rows, (long long)c);
  bench_matmul(rows, c, 4 * c, true);         // MLP fc: x [B*T, C] by W [4C, C]^T
  bench_matmul(rows, 4 * c, c, false);        // its input gradient: g [B*T, 4C] by W [4C, C]
  bench_matmul(4 * c, rows, c, false, true);  // its weight gradient: g^T [4C, B*T] by x [B*T, C]
  bench_matmul(rows, 4 * c, c, true);         // MLP proj
  bench_matmul(rows, c, 3 * c, true);         // QKV
  bench_matmul(256, c, 50257, true);          // LM head
  const int64_t d = 128, n = 2048;            // the default model: B 16, T 128, C 128, vocabulary 256
  std::printf("\ndefault model (B*T = %lld, C = %lld)\n", (long long)n, (long long)d);
  bench_matmul(n, d, 3 * d, true);         // QKV
  bench_matmul(n, d, 4 * d, true);         // MLP fc
  bench_matmul(n, 4 * d, d, true);         // MLP proj
  bench_matmul(n, 4 * d, d, false);        // fc's input gradient
  bench_matmul(4 * d, n, d, false, true);  // fc's weight gradient
  bench_matmul(n, d, 256, true);           // LM head
  std::printf("\n");
  for (int64_t t : {64, 128, 256}) {
    Tensor qkv = Tensor::randn({4, t, 3 * c}, 3);
    qkv.set_requires_grad(true);
    bench_fused("attention", t, [&] { return attention(qkv, 12); }, qkv);
    Tensor x = Tensor::randn({4, t, c}, 4), w = Tensor::ones({c}), b = Tensor::zeros({c});
    x.set_requires_grad(true);
    bench_fused("layernorm", t, [&] { return layernorm(x, w, b); }, x);
    Tensor logits = Tensor::randn({4 * t, 50257}, 5);
    logits.set_requires_grad(true);
    Tensor targets = Tensor::zeros({4 * t}, DType::I32);
    VocabLayout whole({0}, 50257, 50257);
    bench_fused("cross_entropy", t, [&] { return vocab_parallel_cross_entropy(logits, targets, whole, nullptr); },
                logits);
  }
  std::printf("\nfusions\n");
  bench_fusions();
  return 0;
}

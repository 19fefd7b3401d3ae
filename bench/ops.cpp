// bench/ops: speed of the core ops on the CPU at GPT-2 sizes.
//  - matmul GFLOP/s through flextp's tensor layer (which runs the packed AVX2 kernel of
//    core/cpu/sgemm.cpp for big f32 products) next to a bare Eigen GEMM of the same size;
//  - forward + backward ms of the fused attention, LayerNorm and cross-entropy at B = 4,
//    T = 64..256, C = 768 (12 heads; vocabulary 50257 for the cross-entropy).
#include <algorithm>
#include <cstdio>

#include "bench/timer.h"
#include "core/autograd.h"
#include "core/cpu/eigen.h"
#include "core/ops/attention.h"
#include "core/ops/cross_entropy.h"
#include "core/ops/layernorm.h"
#include "core/ops/matmul.h"
#include "core/ops/reduce.h"
#include "core/parallel_for.h"

using namespace flextp;

namespace {

void bench_matmul(int64_t m, int64_t k, int64_t n, bool trans_b) {
  Tensor a = Tensor::randn({m, k}, 1);
  Tensor b = trans_b ? Tensor::randn({n, k}, 2) : Tensor::randn({k, n}, 2);
  double flops = 2.0 * m * n * k;
  cpu::RowMatrix<float> ea = cpu::matrix(a.data<float>(), m, k, k);
  cpu::RowMatrix<float> eb = cpu::matrix(b.data<float>(), b.size(0), b.size(1), b.size(1));
  cpu::RowMatrix<float> ec(m, n);
  auto eigen = [&] {
    if (trans_b)
      ec.noalias() = ea * eb.transpose();
    else
      ec.noalias() = ea * eb;
  };
  auto layer = [&] { matmul(a, b, false, trans_b); };
  // Alternate the two and keep each one's best median: the first runs warm the caches and clocks.
  double t_layer = 1e30, t_eigen = 1e30;
  for (int round = 0; round < 2; ++round) {
    t_eigen = std::min(t_eigen, bench::median_ms(eigen));
    t_layer = std::min(t_layer, bench::median_ms(layer));
  }
  std::printf("matmul %5lldx%-5lld x %5lldx%-5lld%s  flextp %7.1f GFLOP/s   bare Eigen %7.1f GFLOP/s   ratio %.2f\n",
              (long long)m, (long long)k, (long long)b.size(0), (long long)b.size(1),
              trans_b ? "^T" : "  ", flops / t_layer / 1e6, flops / t_eigen / 1e6, t_eigen / t_layer);
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

}  // namespace

int main() {
  std::printf("flextp bench/ops: %d threads, float32, median of 7 runs\n\n", num_threads());
  const int64_t c = 768;
  bench_matmul(512, c, 4 * c, true);   // MLP fc: x [B*T, C] by W [4C, C]^T
  bench_matmul(512, 4 * c, c, false);  // MLP proj
  bench_matmul(512, c, 3 * c, true);   // QKV
  bench_matmul(256, c, 50257, true);   // LM head
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
    bench_fused("cross_entropy", t, [&] { return cross_entropy(logits, targets); }, logits);
  }
  return 0;
}

// Every op: forward values on a hand-computed case, gradients against finite differences (f64, on
// the CPU and on the GPU where one exists), f32 against f64, f32 on the GPU against the CPU
// (values and gradients), and bad input.
#include <doctest/doctest.h>

#include <cmath>

#include "core/cuda/cuda_runtime_api.h"
#include "core/ops/attention.h"
#include "core/ops/dropout.h"
#include "core/ops/elementwise.h"
#include "core/ops/embedding.h"
#include "core/ops/bias_gelu.h"
#include "core/ops/layernorm.h"
#include "core/ops/matmul.h"
#include "core/ops/reduce.h"
#include "core/ops/shape_ops.h"
#include "core/ops/silu.h"
#include "tests/gpu_skip.h"
#include "tests/gradcheck.h"
#include "tests/vocab_cases.h"

using namespace flextp;
using test::check_gradients;
using test::leaf;
using In = std::vector<Tensor>;

namespace {
Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, s); }
Tensor i32(std::vector<int32_t> v, Shape s) { return Tensor::from_vector<int32_t>(v, s); }
std::vector<Tensor> to_f32(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    Tensor c = t.dtype() == DType::F64 ? t.detach().to(DType::F32) : t;
    if (t.requires_grad()) c.set_requires_grad(true);
    out.push_back(c);
  }
  return out;
}
// The op in f32 agrees with the op in f64 (kernels are one template for both).
void check_f32_matches_f64(const test::Fn& f, const std::vector<Tensor>& in64, double tol = 1e-5) {
  NoGradGuard ng;
  test::check_close(f(to_f32(in64)), f(in64), tol);
}
}  // namespace

// ---------------------------------------------------------------- add / mul / scale
TEST_CASE("add, mul: values, a bias on either side, a scalar") {
  Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor bias = f32({10, 20, 30}, {3});
  test::check_values(add(a, bias), {11, 22, 33, 14, 25, 36});
  test::check_values(mul(bias, a), {10, 40, 90, 40, 100, 180});
  test::check_values(mul(a, f32({2}, {})), {2, 4, 6, 8, 10, 12});
  test::check_values(scale(a, 0.5), {0.5, 1, 1.5, 2, 2.5, 3});
  CHECK(add(f32({1, 2, 3}, {1, 3}), a).shape() == Shape{2, 3});
}

TEST_CASE("add, mul, scale: gradients, including repeated inputs") {
  for (auto entry : std::vector<std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)>>{
           {"add", add}, {"mul", mul}}) {
    auto [name_of, fn] = entry;
    const char* name = name_of;
    INFO(name);
    auto f = [fn = fn](const In& in) { return fn(in[0], in[1]); };
    check_gradients(f, {leaf({4, 5}, 1), leaf({4, 5}, 2)});
    check_gradients(f, {leaf({2, 4, 5}, 3), leaf({5}, 4)});     // bias
    check_gradients(f, {leaf({1, 5}, 5), leaf({2, 4, 5}, 6)});  // bias first, with a leading 1
    check_gradients(f, {leaf({3, 4}, 7), leaf({}, 8)});         // scalar
    check_f32_matches_f64(f, {leaf({2, 4, 5}, 3), leaf({5}, 4)});
    test::check_on_gpu(f, to_f32({leaf({2, 4, 5}, 3), leaf({5}, 4)}));
    test::check_on_gpu(f, to_f32({leaf({5}, 5), leaf({2, 4, 5}, 6)}));
  }
  check_gradients([](const In& in) { return scale(in[0], -1.5); }, {leaf({3, 3}, 9)});
}

TEST_CASE("mismatched shapes name both shapes") {
  CHECK_THROWS_WITH_AS(add(Tensor::zeros({2, 3}), Tensor::zeros({4})),
                       doctest::Contains("[2, 3] and [4] cannot be broadcast"), Error);
  // Only one operand may repeat, along the other's leading dimensions.
  CHECK_THROWS_WITH_AS(mul(Tensor::zeros({2, 1}), Tensor::zeros({1, 3})),
                       doctest::Contains("[2, 1] and [1, 3] cannot be broadcast"), Error);
  CHECK_THROWS_WITH_AS(add(Tensor::zeros({2}), Tensor::zeros({2}, DType::F64)),
                       doctest::Contains("dtypes differ"), Error);
}

// ---------------------------------------------------------------- sum
TEST_CASE("sum") {
  Tensor a = f32({1, 2, 3, 4}, {2, 2});
  CHECK(sum(a).item() == 10);
  CHECK(sum(a).shape() == Shape{});
  check_gradients([](const In& in) { return sum(in[0]); }, {leaf({3, 4}, 1)});
  test::check_on_gpu([](const In& in) { return sum(in[0]); }, to_f32({leaf({1000, 37}, 3)}));
}

// ---------------------------------------------------------------- matmul
TEST_CASE("matmul values: plain, transposed, batched, shared right operand") {
  Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = f32({1, 0, 0, 1, 1, 1}, {3, 2});
  test::check_values(matmul(a, b), {4, 5, 10, 11});
  test::check_values(matmul(a, a, false, true), {14, 32, 32, 77});
  test::check_values(matmul(a, a, true, false), {17, 22, 27, 22, 29, 36, 27, 36, 45});
  Tensor batched = matmul(reshape(concat_rows({a, a}), {2, 2, 3}),
                          reshape(concat_rows({b, b}), {2, 3, 2}));
  test::check_values(batched, {4, 5, 10, 11, 4, 5, 10, 11});
  Tensor shared = matmul(reshape(concat_rows({a, a}), {2, 2, 3}), b);
  CHECK(shared.shape() == Shape{2, 2, 2});
  test::check_values(shared, {4, 5, 10, 11, 4, 5, 10, 11});
}

TEST_CASE("matmul gradients for every transpose combination") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("trans_a ", ta, " trans_b ", tb);
      auto f = [ta, tb](const In& in) { return matmul(in[0], in[1], ta, tb); };
      Shape sa = ta ? Shape{5, 3} : Shape{3, 5}, sb = tb ? Shape{4, 5} : Shape{5, 4};
      check_gradients(f, {leaf(sa, 1), leaf(sb, 2)});
      check_f32_matches_f64(f, {leaf(sa, 1), leaf(sb, 2)});
      Shape ba = ta ? Shape{2, 5, 3} : Shape{2, 3, 5}, bb = tb ? Shape{2, 4, 5} : Shape{2, 5, 4};
      check_gradients(f, {leaf(ba, 3), leaf(bb, 4)});
      test::check_on_gpu(f, to_f32({leaf(ba, 3), leaf(bb, 4)}));
      Shape wa = ta ? Shape{70, 33} : Shape{33, 70}, wb = tb ? Shape{45, 70} : Shape{70, 45};
      test::check_on_gpu(f, to_f32({leaf(wa, 7), leaf(wb, 8)}), 1e-4);
    }
  check_gradients([](const In& in) { return matmul(in[0], in[1], false, true); },
                  {leaf({2, 3, 5}, 5), leaf({4, 5}, 6)});  // a linear layer on [B, T, C]
}

TEST_CASE("matmul shape errors name both shapes") {
  CHECK_THROWS_WITH_AS(matmul(Tensor::zeros({2, 3}), Tensor::zeros({2, 3})),
                       doctest::Contains("[2, 3] and [2, 3] do not multiply"), Error);
  CHECK_THROWS_WITH_AS(matmul(Tensor::zeros({2, 2, 3}), Tensor::zeros({3, 3, 2})),
                       doctest::Contains("do not multiply"), Error);
}

// ---------------------------------------------------------------- silu
TEST_CASE("silu: values, gradient, no NaN at the extremes") {
  // x / (1 + e^-x): 1 / (1 + e^-1) = 0.7310585786, -2 / (1 + e^2) = -0.2384058440.
  test::check_values(silu(f32({0, 1, -2}, {3})), {0, 0.7310585786, -0.2384058440}, 1e-6);
  check_gradients([](const In& in) { return silu(in[0]); }, {leaf({4, 7}, 1, 2.0)});
  check_f32_matches_f64([](const In& in) { return silu(in[0]); }, {leaf({4, 7}, 1, 2.0)});
  test::check_on_gpu([](const In& in) { return silu(in[0]); }, to_f32({leaf({1000}, 2)}));
  // e^-x overflows for x far below 0 (f32): silu goes to its limit 0, and so does its slope.
  Tensor x = f32({-200, 200}, {2});
  x.set_requires_grad(true);
  Tensor y = silu(x);
  sum(y).backward();
  test::check_values(y, {0, 200});
  test::check_values(x.grad(), {0, 1});
}

// ---------------------------------------------------------------- layernorm
TEST_CASE("layernorm: values, gradient, shape errors") {
  // Row [1, 2, 3]: mean 2, variance 2/3.
  double r = 1 / std::sqrt(2.0 / 3 + 1e-5);
  Tensor y = layernorm(f32({1, 2, 3}, {1, 3}), f32({1, 2, 1}, {3}), f32({0, 0, 1}, {3}));
  test::check_values(y, {-r, 0, r + 1}, 1e-5);
  auto f = [](const In& in) { return layernorm(in[0], in[1], in[2]); };
  check_gradients(f, {leaf({2, 3, 8}, 1), leaf({8}, 2), leaf({8}, 3)});
  check_f32_matches_f64(f, {leaf({2, 3, 8}, 1), leaf({8}, 2), leaf({8}, 3)});
  test::check_on_gpu(f, to_f32({leaf({4, 70, 300}, 4), leaf({300}, 5), leaf({300}, 6)}), 1e-4);
  CHECK_THROWS_WITH_AS(layernorm(Tensor::zeros({2, 4}), Tensor::ones({3}), Tensor::zeros({4})),
                       doctest::Contains("weight and bias of shape [4]"), Error);
}

// ---------------------------------------------------------------- embedding
TEST_CASE("embedding: lookup, scatter-add gradient, bad ids") {
  Tensor table = f32({0, 1, 10, 11, 20, 21}, {3, 2});
  test::check_values(embedding(i32({2, 0, 2}, {3}), table), {20, 21, 0, 1, 20, 21});
  CHECK(embedding(i32({1, 2, 0, 0}, {2, 2}), table).shape() == Shape{2, 2, 2});
  Tensor ids = i32({1, 3, 1, 0, 1, 4}, {2, 3});  // id 1 three times: gradients add up
  auto embed = [ids](const In& in) { return embedding(ids.to(in[0].device()), in[0]); };
  check_gradients(embed, {leaf({5, 4}, 1)});
  test::check_on_gpu(embed, to_f32({leaf({5, 40}, 3)}));
  CHECK_THROWS_WITH_AS(embedding(i32({3}, {1}), table),
                       doctest::Contains("id 3 at position 0 is outside the table's 3 rows"), Error);
  CHECK_THROWS_WITH_AS(embedding(i32({-2}, {1}), table), doctest::Contains("id -2"), Error);
  // -1: a row held by another rank: zeros out, no gradient.
  test::check_values(embedding(i32({-1, 1}, {2}), table), {0, 0, 10, 11});
  Tensor some_missing = i32({1, -1, 4, -1}, {4});
  check_gradients([some_missing](const In& in) { return embedding(some_missing.to(in[0].device()), in[0]); },
                  {leaf({5, 3}, 2)});
  CHECK_THROWS_WITH_AS(embedding(Tensor::zeros({2}), table), doctest::Contains("must be i32"), Error);
  if (test::gpu_present())
    CHECK_THROWS_WITH_AS(embedding(i32({3}, {1}).to(Device::cuda(0)), table.to(Device::cuda(0))),
                         doctest::Contains("id 3 at position 0 is outside the table's 3 rows"), Error);
}

// ---------------------------------------------------------------- attention
namespace {
// Reference causal attention from the basic ops, on qkv [B, T, H*3*D] for one (b, h).
std::vector<double> reference_attention(const Tensor& qkv, int64_t heads) {
  int64_t b_n = qkv.size(0), t = qkv.size(1), w = qkv.size(2), d = w / (3 * heads);
  std::vector<double> x = qkv.to_vector<double>(), out(b_n * t * heads * d, 0.0);
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < t; ++i) {
        std::vector<double> s(i + 1);
        double m = -1e300, z = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += x[(b * t + i) * w + h * 3 * d + c] * x[(b * t + j) * w + h * 3 * d + d + c];
          s[j] = dot / std::sqrt(double(d));
          m = std::max(m, s[j]);
        }
        for (int64_t j = 0; j <= i; ++j) z += s[j] = std::exp(s[j] - m);
        for (int64_t j = 0; j <= i; ++j)
          for (int64_t c = 0; c < d; ++c)
            out[(b * t + i) * heads * d + h * d + c] +=
                s[j] / z * x[(b * t + j) * w + h * 3 * d + 2 * d + c];
      }
  return out;
}
}  // namespace

TEST_CASE("attention: causal values against a direct computation") {
  // One head, D = 1, T = 2: the first position sees only itself.
  Tensor qkv = f32({1, 1, 3, 1, 2, 5}, {1, 2, 3});
  double p1 = 1 / (1 + std::exp(1.0));  // scores 1*1 and 1*2 for the second query
  test::check_values(attention(qkv, 1), {3, p1 * 3 + (1 - p1) * 5});
  Tensor big = Tensor::randn({2, 5, 2 * 3 * 4}, 3, 0, 0, 1, DType::F64);
  test::check_values(attention(big, 2), reference_attention(big, 2), 1e-12);
}

TEST_CASE("attention: gradient, f32, zero heads, bad shapes") {
  auto f = [](const In& in) { return attention(in[0], 3); };
  check_gradients(f, {leaf({2, 4, 3 * 3 * 2}, 1)});
  check_f32_matches_f64(f, {leaf({2, 7, 3 * 3 * 4}, 2)});
  test::check_on_gpu(f, to_f32({leaf({2, 37, 3 * 3 * 16}, 3)}), 1e-4);
  CHECK(attention(Tensor::zeros({2, 3, 0}), 0).shape() == Shape{2, 3, 0});
  CHECK_THROWS_WITH_AS(attention(Tensor::zeros({2, 3, 10}), 2), doctest::Contains("width 10"),
                       Error);
  CHECK_THROWS_WITH_AS(attention(Tensor::zeros({6, 10}), 2), doctest::Contains("[B, T, H*3*D]"),
                       Error);
}

TEST_CASE("attention over several causal blocks (T 70: 32, 32 and 6 rows): f32 against f64, values and gradients") {
  // The CPU kernel skips the blocks above the diagonal, and runs f32 on the packed GEMM, f64 on Eigen.
  Tensor x64 = leaf({2, 70, 2 * 3 * 8}, 9);
  test::check_values(attention(x64, 2), reference_attention(x64, 2), 1e-12);
  Tensor x32 = to_f32({x64})[0];
  Tensor g = Tensor::randn({2, 70, 2 * 8}, 10, 0, 0, 1, DType::F64);
  Tensor y64 = attention(x64, 2), y32 = attention(x32, 2);
  sum(mul(y64, g)).backward();
  sum(mul(y32, g.to(DType::F32))).backward();
  test::check_close(y32, y64, 1e-5);
  test::check_close(x32.grad(), x64.grad(), 1e-4);
  auto f = [](const In& in) { return attention(in[0], 1); };
  check_gradients(f, {leaf({1, 40, 3 * 2}, 11)});  // two blocks, the second ragged, in f64
}

namespace {
// |a - b| / |b| over all elements: bf16 rounding shows as a relative error near 1e-3.
double relative_error(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to(Device::cpu()).to(DType::F64).to_vector<double>();
  std::vector<double> y = b.to(Device::cpu()).to(DType::F64).to_vector<double>();
  REQUIRE(x.size() == y.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (x[i] - y[i]) * (x[i] - y[i]);
    den += y[i] * y[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}
}  // namespace

// A relative error above this is bf16 rounding at work, not f32 or TF32 (measured by emulating both
// roundings on these shapes: bf16 ~2.2e-3, TF32 ~3e-4).
constexpr double kBf16Visible = 1e-3;

TEST_CASE("on the GPU, bf16 matmuls follow the f32 ones within bf16 rounding") {
  if (test::skip_without_gpu()) return;
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("trans_a ", ta, " trans_b ", tb);
      Tensor a = Tensor::randn(ta ? Shape{3, 29, 37} : Shape{3, 37, 29}, 31);
      Tensor b = Tensor::randn(tb ? Shape{41, 29} : Shape{29, 41}, 32);
      Tensor a3 = Tensor::randn(Shape{3, 29, 41}, 33);
      Device gpu = Device::cuda(0);
      Tensor shared = matmul(a, b, ta, tb), batched = matmul(a, a3, ta, false);
      double e_shared = relative_error(matmul(a.to(gpu), b.to(gpu), ta, tb, bf16), shared);
      double e_batched = relative_error(matmul(a.to(gpu), a3.to(gpu), ta, false, bf16), batched);
      CHECK(e_shared < 1e-2);
      CHECK(e_batched < 1e-2);
      // The bf16 path ran: its rounding shows (~2e-3 for these sums; TF32 gives ~3e-4, f32 ~1e-7).
      CHECK(e_shared > kBf16Visible);
      CHECK(e_batched > kBf16Visible);
    }
  // The gradients take the same path (the CPU ignores the precision).
  auto f = [&](const In& in) { return matmul(in[0], in[1], false, true, bf16); };
  Tensor x = Tensor::randn({8, 16}, 34), w = Tensor::randn({12, 16}, 35);
  Tensor xg = x.to(Device::cuda(0)), wg = w.to(Device::cuda(0));
  x.set_requires_grad(true), w.set_requires_grad(true), xg.set_requires_grad(true), wg.set_requires_grad(true);
  sum(f({x, w})).backward();
  sum(f({xg, wg})).backward();
  double e_x = relative_error(xg.grad(), x.grad()), e_w = relative_error(wg.grad(), w.grad());
  CHECK(e_x < 1e-2);
  CHECK(e_w < 1e-2);
  // One operand of each gradient GEMM is the all-ones upstream gradient, exact in bf16: the other's
  // rounding alone shows (~1e-3; TF32 ~1.5e-4).
  CHECK(e_x > kBf16Visible / 2);
  CHECK(e_w > kBf16Visible / 2);
  // And back on f32, the same GEMMs are exact to f32 rounding: the setting, not chance, made the difference.
  CHECK(relative_error(matmul(x.to(Device::cuda(0)), w.to(Device::cuda(0)), false, true), matmul(x, w, false, true)) < 1e-5);
}

TEST_CASE("on the GPU, cuDNN's fused attention follows the CPU attention within bf16 rounding") {
  if (test::skip_without_gpu()) return;
  Numerics cudnn;
  cudnn.cudnn_attention = true;
  for (int64_t heads : {1, 3}) {
    INFO(heads, " heads");
    int64_t d = 64;
    Tensor x = Tensor::randn({2, 128, heads * 3 * d}, 21, 0, 0, 0.5, DType::F64);
    Tensor g = Tensor::randn({2, 128, heads * d}, 22, 0, 0, 1, DType::F64);
    Tensor xc = x.detach(), xg = x.to(DType::F32).to(Device::cuda(0));
    xc.set_requires_grad(true);
    xg.set_requires_grad(true);
    Tensor yc = attention(xc, heads), yg = attention(xg, heads, cudnn);
    INFO("path: ", cuda::attention_path());
    REQUIRE(cuda::attention_path().rfind("cuDNN", 0) == 0);
    CHECK(relative_error(yg, yc) < 1e-2);
    sum(mul(yc, g)).backward();
    sum(mul(yg, g.to(DType::F32).to(Device::cuda(0)))).backward();
    INFO("backward path: ", cuda::attention_path());
    CHECK(cuda::attention_path().rfind("cuDNN", 0) == 0);
    CHECK(relative_error(xg.grad(), xc.grad()) < 2e-2);
  }
  // A head size cuDNN has no engine for runs on the own kernels, exactly.
  Tensor x = Tensor::randn({2, 16, 2 * 3 * 4}, 23, 0, 0, 1);
  Tensor y = attention(x.to(Device::cuda(0)), 2, cudnn);
  CHECK(cuda::attention_path().find("head size 4") != std::string::npos);
  CHECK(relative_error(y, attention(x, 2)) < 1e-5);
}

// ---------------------------------------------------------------- cross-entropy
// The model's loss (parallel/tp/vocab_parallel.h) with the whole vocabulary on one process;
// tests/test_vocab_parallel.cpp shards it.
TEST_CASE("cross-entropy: values, ignore index, gradient, bad targets") {
  using test::one_process_cross_entropy;
  Tensor logits = f32({0, 0, 0, 0, std::log(3.0f), 0}, {2, 3});
  // Row 0 uniform: ln 3. Row 1 [0, ln 3, 0]: p(target 1) = 3/5.
  CHECK(one_process_cross_entropy(logits, i32({2, 1}, {2})).item() ==
        doctest::Approx((std::log(3.0) + std::log(5.0 / 3)) / 2));
  CHECK(one_process_cross_entropy(logits, i32({2, -100}, {2})).item() ==
        doctest::Approx(std::log(3.0)));
  CHECK(one_process_cross_entropy(logits, i32({-1, -1}, {2}), -1).item() == 0.0);
  Tensor targets = i32({1, 4, -100, 0}, {4});
  auto ce = [targets](const In& in) {
    return one_process_cross_entropy(in[0], targets.to(in[0].device()));
  };
  check_gradients(ce, {leaf({4, 5}, 1, 3.0)});
  check_f32_matches_f64(ce, {leaf({4, 5}, 1, 3.0)});
  Tensor many = Tensor::from_vector<int32_t>([] {
    std::vector<int32_t> t(64);
    for (size_t i = 0; i < t.size(); ++i) t[i] = i % 9 == 0 ? -100 : static_cast<int32_t>(i * 37 % 1000);
    return t;
  }(), {64});
  test::check_on_gpu(
      [many](const In& in) { return one_process_cross_entropy(in[0], many.to(in[0].device())); },
      to_f32({leaf({64, 1000}, 2, 3.0)}));
  if (test::gpu_present()) {
    Tensor on_gpu = logits.to(Device::cuda(0));
    CHECK_THROWS_WITH_AS(one_process_cross_entropy(on_gpu, i32({3, 0}, {2}).to(Device::cuda(0))),
                         doctest::Contains("target 3 of row 0 is outside the 3 classes"), Error);
    CHECK(one_process_cross_entropy(on_gpu, i32({-1, -1}, {2}).to(Device::cuda(0)), -1).item() == 0.0);
  }
  CHECK_THROWS_WITH_AS(test::one_process_cross_entropy(logits, i32({3, 0}, {2})),
                       doctest::Contains("target 3 of row 0 is outside the 3 classes"), Error);
  CHECK_THROWS_WITH_AS(test::one_process_cross_entropy(logits, i32({0}, {1})), doctest::Contains("targets must be"),
                       Error);
}

// ---------------------------------------------------------------- dropout
TEST_CASE("dropout: identity at p = 0, seeded mask, scaled survivors, gradient") {
  Tensor x = Tensor::ones({10000});
  CHECK(dropout(x, 0.0, 1, 2).same_storage(x));
  std::vector<float> y = dropout(x, 0.25, 1, 2).to_vector<float>();
  CHECK(y == dropout(x, 0.25, 1, 2).to_vector<float>());
  CHECK(y != dropout(x, 0.25, 1, 3).to_vector<float>());
  int kept = 0;
  for (float v : y) {
    CHECK((v == 0.0f || v == doctest::Approx(1 / 0.75)));
    kept += v != 0;
  }
  CHECK(std::abs(kept / 10000.0 - 0.75) < 0.02);
  check_gradients([](const In& in) { return dropout(in[0], 0.3, 5, 6); }, {leaf({6, 6}, 1)});
  test::check_on_gpu([](const In& in) { return dropout(in[0], 0.25, 1, 2); }, to_f32({leaf({10000}, 2)}));
  CHECK_THROWS_WITH_AS(dropout(x, 1.0, 1, 2), doctest::Contains("[0, 1)"), Error);
}

TEST_CASE("dropout of a run of rows from element `first` on draws the whole tensor's masks there") {
  Tensor whole = Tensor::ones({8, 50});
  std::vector<float> all = dropout(whole, 0.5, 7, 9).to_vector<float>();
  std::vector<float> tail = dropout(slice_rows(whole, 3, 5).clone(), 0.5, 7, 9, 3 * 50).to_vector<float>();
  CHECK(tail == std::vector<float>(all.begin() + 3 * 50, all.end()));
  CHECK(tail != std::vector<float>(all.begin(), all.begin() + 5 * 50));  // not the first rows' masks
  check_gradients([](const In& in) { return dropout(in[0], 0.3, 5, 6, 1000); }, {leaf({6, 6}, 1)});
  test::check_on_gpu([](const In& in) { return dropout(in[0], 0.25, 1, 2, 12345); }, to_f32({leaf({10000}, 2)}));
}

// ---------------------------------------------------------------- a small composite
TEST_CASE("a two-layer MLP with a LayerNorm trains its gradient end to end") {
  auto f = [](const In& in) {
    Tensor h = bias_gelu(matmul(in[0], in[1], false, true), in[2]);
    return layernorm(matmul(h, in[3]), in[4], in[5]);
  };
  check_gradients(f, {leaf({2, 3, 4}, 1), leaf({6, 4}, 2), leaf({6}, 3), leaf({6, 5}, 4),
                      leaf({5}, 5), leaf({5}, 6)});
  test::check_on_gpu(f, to_f32({leaf({2, 3, 4}, 1), leaf({6, 4}, 2), leaf({6}, 3), leaf({6, 5}, 4),
                                leaf({5}, 5), leaf({5}, 6)}));
}

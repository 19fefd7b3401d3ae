// The attention paths of the GPU inside a whole model, where a broken attention cannot hide. In
// a freshly initialised GPT the attention barely moves the loss (weights of 0.02 make it nearly
// uniform and its output small), so a training run's loss within 2-3% says nothing about it. Here
// the weights are scaled until the attention decides the loss, which a CPU test confirms, and the
// GPU's paths must then give the CPU's loss and gradients within bf16 rounding.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "core/autograd.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape_ops.h"
#include "core/cuda/cuda_runtime_api.h"
#include "core/random.h"
#include "nn/gpt.h"
#include "tests/gpu_skip.h"

using namespace flextp;

namespace {
// What the bf16 and TF32 paths are held to, as a relative error of logits, loss and gradients
// (one bf16 rounding is ~4e-3 relative at most; sums average it down).
constexpr double kBf16Tolerance = 1e-2;

// Head size 64 and 128 positions: a case cuDNN's fused attention has engines for.
GPTConfig sharp_attention_config(DType dtype) {
  GPTConfig c;
  c.vocab_size = 64;
  c.vocab_unit = 64;
  c.n_positions = 128;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 128;
  c.mlp_unit = 128;
  c.dropout = 0;
  c.dtype = dtype;
  return c;
}

// Larger weights where the attention acts: queries and keys that give sharp, position-dependent
// scores, an attention output that dominates the residual stream, and logits of order one.
void sharpen(GPT& model) {
  NoGradGuard ng;
  auto factor = [](const std::string& name) {
    if (name.find("attn.c_attn.weight") != std::string::npos) return 5.0;
    if (name.find("attn.c_proj.weight") != std::string::npos) return 10.0;
    if (name == "wte.weight" || name == "transformer.wte.weight") return 3.0;
    return 1.0;
  };
  for (Parameter* p : model.parameters()) p->value.copy_from(scale(p->value, factor(p->name)));
}

// Sequences whose next token is the token 7 places back: only attention can predict it.
std::pair<Tensor, Tensor> lookback_batch(int64_t b, int64_t t) {
  std::vector<int32_t> ids(b * (t + 7)), x(b * t), y(b * t);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(rng::uniform(i, 5, 77) * 64);
  for (int64_t r = 0; r < b; ++r)
    for (int64_t s = 0; s < t; ++s) {
      int64_t at = r * (t + 7) + s + 7;
      ids[at] = ids[at - 7];
      x[r * t + s] = ids[at - 1];
      y[r * t + s] = ids[at];
    }
  return {Tensor::from_vector(x, {b, t}), Tensor::from_vector(y, {b, t})};
}

Tensor logits_of(const GPT& model, const Tensor& ids) {
  NoGradGuard ng;
  return model.logits(ids);
}

double relative_error(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to(Device::cpu()).to(DType::F64).to_vector<double>();
  std::vector<double> y = b.to(Device::cpu()).to(DType::F64).to_vector<double>();
  REQUIRE(x.size() == y.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) num += (x[i] - y[i]) * (x[i] - y[i]), den += y[i] * y[i];
  return std::sqrt(num / std::max(den, 1e-300));
}

// The logits of the same weights with the queries zeroed: every position attends uniformly to its
// past, which is what a broken mask or softmax looks like from outside.
Tensor logits_with_uniform_attention(GPT& model, const Tensor& ids) {
  Parameter* qkv = nullptr;
  for (Parameter* p : model.parameters())
    if (p->name.find("c_attn.weight") != std::string::npos) qkv = p;
  REQUIRE(qkv != nullptr);
  Tensor saved = qkv->value.clone();
  int64_t d = model.config().head_dim();
  {
    NoGradGuard ng;
    for (int64_t h = 0; h < model.config().n_head; ++h)  // a head's rows: its q, k, v blocks of d
      slice_rows(qkv->value, h * 3 * d, d).fill_(0);
  }
  Tensor l = logits_of(model, ids);
  qkv->value.copy_from(saved);
  return l;
}
}  // namespace

TEST_CASE("the GPU attention test's model is one whose logits the attention decides") {
  GPT model(sharp_attention_config(DType::F64));
  sharpen(model);
  Tensor ids = lookback_batch(2, 128).first;
  Tensor sharp = logits_of(model, ids);
  double change = relative_error(logits_with_uniform_attention(model, ids), sharp);
  INFO("uniform attention changes the logits by ", change);
  CHECK(change > 10 * kBf16Tolerance);  // what the GPU paths are held to below, 10 times over
  CHECK(relative_error(logits_of(model, ids), sharp) == 0);  // the probe restored the weights
}

TEST_CASE("on the GPU, cuDNN attention and bf16 matmuls give the CPU's loss and gradients in a model") {
  if (test::skip_without_gpu()) return;
  auto [ids, targets] = lookback_batch(2, 128);
  GPT cpu(sharp_attention_config(DType::F64));
  sharpen(cpu);
  Tensor ref_logits = logits_of(cpu, ids);
  Tensor ref = cpu.loss(ids, targets);
  ref.backward();
  struct Case {
    const char* name;
    MatmulPrecision precision;
    const char* attention;
  };
  for (Case k : {Case{"f32, own attention", MatmulPrecision::f32, "own"},
                 Case{"TF32, cuDNN attention", MatmulPrecision::tf32, "cudnn"},
                 Case{"bf16, cuDNN attention", MatmulPrecision::bf16, "cudnn"}}) {
    INFO(k.name);
    GPT gpu(sharp_attention_config(DType::F32));
    sharpen(gpu);
    gpu.to(Device::cuda(0));
    gpu.set_numerics(numerics_of(k.precision, k.attention));
    Tensor loss = gpu.loss(ids, targets);
    loss.backward();
    double tol = k.precision == MatmulPrecision::f32 ? 1e-4 : kBf16Tolerance;
    CHECK(relative_error(logits_of(gpu, ids), ref_logits) < tol);
    INFO("attention: ", cuda::attention_path());
    if (std::string(k.attention) == "cudnn") CHECK(cuda::attention_path().rfind("cuDNN", 0) == 0);
    CHECK(std::abs(loss.item() - ref.item()) <= tol * ref.item());
    std::vector<Parameter*> a = gpu.parameters(), b = cpu.parameters();
    for (size_t i = 0; i < a.size(); ++i) {
      INFO(a[i]->name);
      CHECK(relative_error(a[i]->grad(), b[i]->grad()) < 5 * tol);
    }
  }
}

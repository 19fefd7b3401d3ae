// The GPT model: gradient against finite differences, loss at initialisation, overfitting a
// batch, configuration errors, sampling.
#include <doctest/doctest.h>

#include <cmath>

#include "core/random.h"
#include "nn/generate.h"
#include "nn/gpt.h"
#include "nn/gelu_mlp.h"
#include "optim/optimizer.h"
#include "tests/gradcheck.h"

using namespace flextp;

namespace {
GPTConfig tiny(DType dtype = DType::F32) {
  GPTConfig c;
  c.vocab_size = 11;  // vocab units of 4: the last one is short (3 rows)
  c.vocab_unit = 4;
  c.n_positions = 6;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  c.mlp_unit = 8;
  c.dtype = dtype;
  return c;
}
Tensor random_ids(Shape shape, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> v(numel(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(rng::uniform(i, 0, seed) * static_cast<double>(vocab));
  return Tensor::from_vector(v, shape);
}

// The whole model's gradient against finite differences, every parameter sampled, on every device.
void check_whole_gradient(const GPTConfig& c, size_t parameters) {
  for (Device d : test::devices()) {
    INFO("on ", d.str());
    GPT model(c);
    model.to(d);
    Tensor ids = random_ids({2, 5}, 11, 1), targets = random_ids({2, 5}, 11, 2);  // moved by the model
    std::vector<Tensor> values;
    for (Parameter* p : model.parameters()) values.push_back(p->value);
    CHECK(values.size() == parameters);
    // The inputs are the parameters themselves: the harness perturbs them in place.
    // At initialisation the embeddings are ~0.02, so the first LayerNorm bends the loss on that
    // scale: the truncation error of the differences (~(eps / 0.02)^2) wants eps below the default.
    test::GradCheck opts;
    opts.eps = 3e-6;
    opts.max_entries = 24;
    test::check_gradients_here([&](const std::vector<Tensor>&) { return model.loss(ids, targets); }, values, opts);
  }
}
}  // namespace

TEST_CASE("the whole GPT's gradient equals finite differences (f64, every parameter sampled)") {
  check_whole_gradient(tiny(DType::F64), 2 + 2 * 12 + 2);
}

TEST_CASE("the whole GPT with the SwiGLU MLP: its gradient equals finite differences (f64)") {
  GPTConfig c = tiny(DType::F64);
  c.mlp = "swiglu";
  check_whole_gradient(c, 2 + 2 * 14 + 2);  // gate, up and down projections, each with a bias
}

TEST_CASE("initial loss is close to ln(V)") {
  GPTConfig c;
  c.n_layer = 2;
  c.n_embd = 64;
  c.n_positions = 32;
  GPT model(c);
  Tensor ids = random_ids({4, 32}, 256, 3), targets = random_ids({4, 32}, 256, 4);
  double loss = model.loss(ids, targets).item();
  INFO("loss ", loss, " vs ln 256 = ", std::log(256.0));
  CHECK(std::abs(loss - std::log(256.0)) < 0.05 * std::log(256.0));
}

TEST_CASE("a tiny batch overfits to a loss below 0.05") {
  GPTConfig c = tiny();
  c.vocab_size = 16;
  c.n_embd = 32;
  c.mlp_unit = 32;
  GPT model(c);
  AdamW opt({0.9, 0.999, 1e-8, 0.0});
  Tensor ids = random_ids({2, 6}, 16, 5), targets = random_ids({2, 6}, 16, 6);
  std::vector<Parameter*> params = model.parameters();
  double loss = 0;
  for (int step = 0; step < 300 && !(loss > 0 && loss < 0.05); ++step) {
    Tensor l = model.loss(ids, targets);
    loss = l.item();
    l.backward();
    opt.step(params, 1e-2);
    for (Parameter* p : params) p->value.zero_grad();
  }
  CHECK(loss < 0.05);
}

TEST_CASE("impossible configurations and inputs give clear errors") {
  GPTConfig c = tiny();
  c.n_head = 3;
  CHECK_THROWS_WITH_AS(GPT{c}, doctest::Contains("n_embd 8 is not divisible by n_head 3"), Error);
  c = tiny();
  c.mlp_unit = 5;
  CHECK_THROWS_WITH_AS(GPT{c}, doctest::Contains("mlp_unit 5 must divide"), Error);
  GPT model(tiny());
  CHECK_THROWS_WITH_AS(model.loss(random_ids({1, 7}, 11, 1), random_ids({1, 7}, 11, 2)),
                       doctest::Contains("sequence length 7 exceeds n_positions 6"), Error);
  CHECK_THROWS_WITH_AS(model.loss(random_ids({1, 4}, 11, 1), random_ids({1, 5}, 11, 2)),
                       doctest::Contains("must have the shape of ids"), Error);
  CHECK_THROWS_WITH_AS(model.loss(Tensor::full({1, 2}, 11, DType::I32), Tensor::zeros({1, 2}, DType::I32)),
                       doctest::Contains("id 11"), Error);
}

TEST_CASE("initialisation follows GPT-2: weights N(0, 0.02), scaled projections, zero biases") {
  GPTConfig c;
  c.n_layer = 3;
  c.n_embd = 64;
  GPT model(c);
  auto stddev = [](const Tensor& t) {
    std::vector<float> v = t.to_vector<float>();
    double s = 0;
    for (float x : v) s += double(x) * x;
    return std::sqrt(s / v.size());
  };
  for (Parameter* p : model.parameters()) {
    INFO(p->name);
    if (p->name.find("ln") != std::string::npos) {
      double expect = p->name.find("weight") != std::string::npos ? 1.0 : 0.0;
      for (float x : p->value.to_vector<float>()) CHECK(x == expect);
    } else if (p->name.find("bias") != std::string::npos) {
      for (float x : p->value.to_vector<float>()) CHECK(x == 0.0f);
    } else if (p->name.find("c_proj") != std::string::npos) {
      CHECK(stddev(p->value) == doctest::Approx(0.02 / std::sqrt(6.0)).epsilon(0.05));
    } else {
      CHECK(stddev(p->value) == doctest::Approx(0.02).epsilon(0.05));
    }
  }
}

TEST_CASE("sampling is seeded, respects top-k = 1 as greedy, and needs a prompt") {
  GPT model(tiny());
  std::vector<int32_t> a = generate(model, {1, 2}, {8, 1.0, 0, 7});
  CHECK(a.size() == 10);
  CHECK(a == generate(model, {1, 2}, {8, 1.0, 0, 7}));
  CHECK(generate(model, {1, 2}, {8, 1.0, 1, 7}) == generate(model, {1, 2}, {8, 0.0, 0, 0}));
  CHECK_THROWS_WITH_AS(generate(model, {}, {8, 1.0, 0, 7}), doctest::Contains("prompt"), Error);
}

TEST_CASE("the model's numerics reach every layer that multiplies or attends, and default to f32") {
  GPT model(tiny());
  CHECK(model.numerics().matmul == MatmulPrecision::f32);
  CHECK_FALSE(model.numerics().cudnn_attention);
  model.set_numerics(numerics_of(MatmulPrecision::bf16, "auto"));
  std::vector<const Module*> layers{&model};
  for (const Block* b : model.blocks()) {
    const GeluMlp& mlp = dynamic_cast<const GeluMlp&>(b->mlp);  // the default kind, gelu
    layers.insert(layers.end(), {&b->attn, &b->attn.c_attn, &b->attn.c_proj, &mlp.c_fc, &mlp.c_proj});
  }
  for (const Module* m : layers) {
    INFO(m->prefix());
    CHECK(m->numerics().matmul == MatmulPrecision::bf16);
    CHECK(m->numerics().cudnn_attention);  // "auto" with bf16 matmuls
  }
  CHECK_FALSE(numerics_of(MatmulPrecision::tf32, "auto").cudnn_attention);
  CHECK(numerics_of(MatmulPrecision::f32, "cudnn").cudnn_attention);
  CHECK_FALSE(numerics_of(MatmulPrecision::bf16, "own").cudnn_attention);
}

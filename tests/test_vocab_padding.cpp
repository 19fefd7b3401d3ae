// The model's vocabulary padded to a multiple of 128 rows (GPTConfig::vocab_pad), on a tiny
// model with a vocabulary that is not a multiple (300 -> 384 rows, as GPT-2's 50257 -> 50304):
// it computes what the unpadded model computes, the padded rows never change and never get
// sampled, and files hold the real rows only.
#include <doctest/doctest.h>

#include "core/autograd.h"
#include "core/safetensors.h"
#include "nn/generate.h"
#include "nn/init.h"
#include "optim/optimizer.h"
#include "store/checkpoint.h"
#include "tests/temp_dir.h"

using namespace flextp;

namespace {
constexpr int64_t kVocab = 300;

GPTConfig padded_config(DType dtype = DType::F64) {
  GPTConfig c;
  c.vocab_size = kVocab;
  c.vocab_unit = 64;
  c.n_positions = 8;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 16;
  c.mlp_unit = 16;
  c.dtype = dtype;
  return c;
}

GPTConfig unpadded_config(DType dtype = DType::F64) {
  GPTConfig c = padded_config(dtype);
  c.vocab_pad = 1;
  return c;
}

// Ids across the vocabulary, the last real id among them.
Tensor ids() { return Tensor::from_vector<int32_t>({299, 5, 256, 0, 131, 298, 64, 200}, {2, 4}); }
Tensor targets() { return Tensor::from_vector<int32_t>({1, 299, 17, 255, 256, 3, 299, 128}, {2, 4}); }

std::vector<double> rows_of(const Tensor& t, int64_t first, int64_t count) {
  std::vector<double> all = t.to(DType::F64).to_vector<double>();
  int64_t cols = t.numel() / t.size(0);
  return std::vector<double>(all.begin() + first * cols, all.begin() + (first + count) * cols);
}

void check_all_zero(const std::vector<double>& v, const char* what) {
  for (size_t i = 0; i < v.size(); ++i) {
    INFO(what, " element ", i);
    REQUIRE(v[i] == 0.0);
  }
}

void check_near(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element ", i);
    CHECK(a[i] == doctest::Approx(b[i]).epsilon(tol));
  }
}
}  // namespace

TEST_CASE("a padded vocabulary: 300 ids in 384 rows, 6 units of 64, the padding in the last units") {
  GPTConfig c = padded_config();
  CHECK(c.padded_vocab() == 384);
  CHECK(c.n_vocab_units() == 6);
  CHECK(GPTConfig{}.padded_vocab() == 256);  // the byte vocabulary is padded by nothing
  GPTConfig gpt2;
  gpt2.vocab_size = 50257;
  CHECK(gpt2.padded_vocab() == 50304);
  GPT m(c);
  CHECK(m.wte.value.shape() == Shape{384, 16});
  check_all_zero(rows_of(m.wte.value, kVocab, 384 - kVocab), "padded row");
  // The real rows are drawn as without padding: element (r, c) from index r * C + c.
  Tensor drawn = normal_unit_rows("wte.weight", c.seed, {0, 1, 2, 3, 4}, 64, kVocab, 16, 0.02, DType::F64);
  CHECK(rows_of(m.wte.value, 0, kVocab) == drawn.to_vector<double>());
  // The same for the byte vocabulary, which needs no padding: nothing is zeroed.
  GPTConfig bytes = padded_config(DType::F32);
  bytes.vocab_size = 256;
  GPT b(bytes);
  CHECK(b.wte.value.to_vector<float>() ==
        normal_unit_rows("wte.weight", c.seed, {0, 1, 2, 3}, 64, 256, 16, 0.02, DType::F32).to_vector<float>());
}

TEST_CASE("the padded model computes the unpadded one: loss, gradients and an AdamW step (f64)") {
  GPT padded(padded_config()), plain(unpadded_config());
  Tensor lp = padded.loss(ids(), targets()), lu = plain.loss(ids(), targets());
  CHECK(lp.item() == doctest::Approx(lu.item()).epsilon(1e-10));
  lp.backward();
  lu.backward();
  std::vector<Parameter*> pp = padded.parameters(), pu = plain.parameters();
  REQUIRE(pp.size() == pu.size());
  for (size_t i = 0; i < pp.size(); ++i) {
    INFO(pp[i]->name);
    int64_t rows = pu[i]->value.size(0);
    check_near(rows_of(pp[i]->grad(), 0, rows), rows_of(pu[i]->grad(), 0, rows), 1e-10);
  }
  check_all_zero(rows_of(padded.wte.grad(), kVocab, 384 - kVocab), "padded row's gradient");

  // Weight decay and Adam leave the padded rows at zero; the real rows move as the plain model's.
  AdamW op({0.9, 0.999, 1e-8, 0.1}), ou({0.9, 0.999, 1e-8, 0.1});
  op.step(pp, 1e-2);
  ou.step(pu, 1e-2);
  check_all_zero(rows_of(padded.wte.value, kVocab, 384 - kVocab), "padded row after a step");
  check_near(rows_of(padded.wte.value, 0, kVocab), rows_of(plain.wte.value, 0, kVocab), 1e-10);
  for (Parameter* p : pp) p->value.zero_grad();
  for (Parameter* p : pu) p->value.zero_grad();
  CHECK(padded.loss(ids(), targets()).item() == doctest::Approx(plain.loss(ids(), targets()).item()).epsilon(1e-10));
}

TEST_CASE("logits and sampling see the real vocabulary only, however loud the padded rows") {
  GPT m(padded_config(DType::F32));
  // Padded rows that would win every softmax if they were seen: +-50 along each channel.
  std::vector<float> w = m.wte.value.to_vector<float>();
  for (int64_t r = kVocab; r < 384; ++r) w[r * 16 + (r % 16)] = (r % 2 ? 50.f : -50.f);
  m.wte.value.copy_from(Tensor::from_vector(w, {384, 16}));
  NoGradGuard ng;
  CHECK(m.logits(ids()).shape() == Shape{2, 4, kVocab});
  for (double temperature : {0.0, 1.0}) {
    INFO("temperature ", temperature);
    std::vector<int32_t> out = generate(m, {299, 3}, {24, temperature, 0, 7});
    REQUIRE(out.size() == 26);
    for (int32_t id : out) CHECK(id < kVocab);
  }
}

TEST_CASE("checkpoints of a padded model hold the real rows; an unpadded model's file loads") {
  test::TempDir dir("vocabpad");
  GPT a(padded_config(DType::F32));
  AdamW oa({0.9, 0.999, 1e-8, 0.1});
  std::vector<Parameter*> params = a.parameters();
  a.loss(ids(), targets()).backward();
  oa.step(params, 1e-2);
  save_checkpoint(dir.file("m.safetensors"), a, &oa, {1, 5, {}});
  SafetensorsFile f = read_safetensors(dir.file("m.safetensors"));
  CHECK(f.tensors.at("wte.weight").shape() == Shape{kVocab, 16});
  SafetensorsFile s = read_safetensors(dir.file("m.safetensors.state"));
  CHECK(s.tensors.at("wte.weight.m").shape() == Shape{kVocab, 16});
  CHECK(s.tensors.at("wte.weight.v").shape() == Shape{kVocab, 16});

  // Back into a padded model: the same logits, the padding zero again (the initialisation of
  // another seed is overwritten).
  GPTConfig other = padded_config(DType::F32);
  other.seed = 4;
  GPT b(other);
  AdamW ob({0.9, 0.999, 1e-8, 0.1});
  load_checkpoint(dir.file("m.safetensors"), b, &ob);
  check_all_zero(rows_of(b.wte.value, kVocab, 384 - kVocab), "padded row after a load");
  check_all_zero(rows_of(b.wte.state.at("m"), kVocab, 384 - kVocab), "padded row of m after a load");
  NoGradGuard ng;
  CHECK(a.logits(ids()).to_vector<float>() == b.logits(ids()).to_vector<float>());

  // A file of a model without padding (the format written before padding existed) loads into the
  // padded model and back, and gives the same logits both ways.
  GPT plain(unpadded_config(DType::F32));
  save_checkpoint(dir.file("plain.safetensors"), plain, nullptr, {});
  GPT c(other);
  load_checkpoint(dir.file("plain.safetensors"), c, nullptr);
  std::vector<float> lc = c.logits(ids()).to_vector<float>(), lp = plain.logits(ids()).to_vector<float>();
  REQUIRE(lc.size() == lp.size());
  for (size_t i = 0; i < lc.size(); ++i) CHECK(lc[i] == doctest::Approx(lp[i]).epsilon(1e-5));
  GPT d(unpadded_config(DType::F32));
  load_checkpoint(dir.file("m.safetensors"), d, nullptr);
  CHECK(rows_of(d.wte.value, 0, kVocab) == rows_of(a.wte.value, 0, kVocab));
}

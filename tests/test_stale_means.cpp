// Stale imputation's running means are training state: only training forwards move them, and a
// checkpoint carries them as a slot of the weights like the optimizer's, so that a resumed run
// imputes what the uninterrupted one would have.
#include <doctest/doctest.h>

#include "core/autograd.h"
#include "core/ops/shape_ops.h"
#include "core/safetensors.h"
#include "nn/checkpoint.h"
#include "nn/generate.h"
#include "parallel/balance/active_units.h"
#include "tests/gradcheck.h"
#include "tests/resize_gpt.h"
#include "tests/stale_means.h"
#include "tests/temp_dir.h"

using namespace flextp;

namespace {
GPTConfig tiny() { return test::resize_test_config(DType::F64); }
Tensor ids(uint64_t seed) {
  std::vector<int32_t> v(2 * 8);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((i * 7 + seed * 3 + i * i * seed) % 16);
  return Tensor::from_vector(v, {2, 8});
}

std::map<std::string, std::vector<double>> means(const GPT& m) { return test::known_stale_means(m); }

// Which units are skipped at which step: none at first (every mean gets known), then a set that
// leaves out units the next set brings back, so that means updated while active matter later.
void resize_for_step(GPT& m, int64_t step) {
  std::vector<Parameter*> params = m.parameters();
  std::vector<Parameter*> heads = group_parameters(params, "h.0.head"), mlp = group_parameters(params, "h.1.mlp");
  if (step < 2) return;
  if (step < 6) {
    reorder_units(heads, {2, 0, 3, 1});
    set_active_units(heads, 2);
    reorder_units(mlp, {3, 1, 2, 0});
    set_active_units(mlp, 1);
  } else {
    reorder_units(heads, {1, 3, 0, 2});
    set_active_units(heads, 1);
    reorder_units(mlp, {0, 2, 1, 3});
    set_active_units(mlp, 2);
  }
}

std::vector<double> train(GPT& m, AdamW& opt, int64_t first, int64_t last) {
  std::vector<double> losses;
  for (int64_t s = first; s < last; ++s) {
    resize_for_step(m, s);
    std::vector<Parameter*> params = m.parameters();
    Tensor loss = m.loss(ids(s), ids(s + 1));
    loss.backward();
    opt.step(params, 1e-2);
    for (Parameter* p : params) p->value.zero_grad();
    losses.push_back(loss.item());
  }
  return losses;
}
}  // namespace

TEST_CASE("evaluation and sampling leave the stale means where training left them") {
  GPT m(tiny());
  m.set_imputation(Impute::Stale);
  m.loss(ids(1), ids(2));  // a training forward: every unit's mean is known
  set_active_units(group_parameters(m.parameters(), "h.1.mlp"), 2);
  std::map<std::string, std::vector<double>> trained = means(m);
  REQUIRE(trained.size() == 2 * 4 + 2 * 4);  // two layers of 4 heads and 4 MLP units
  {  // an evaluation, as train and bench/priority run it
    NoGradGuard ng;
    m.set_training(false);
    m.loss(ids(3), ids(4));
    m.set_training(true);
  }
  generate(m, {1, 2, 3}, SampleOptions{4, 1.0, 0, 7});
  CHECK(means(m) == trained);
  // A training forward on other tokens does move them: the comparison above can see a change.
  m.loss(ids(3), ids(4));
  CHECK(means(m) != trained);
}

TEST_CASE("a run with resizing and stale imputation resumes exactly from a checkpoint (f64)") {
  test::TempDir dir("stale-resume");
  std::string path = dir.file("m.safetensors");
  GPTConfig c = tiny();
  AdamWOptions ao{0.9, 0.999, 1e-8, 0.1};
  GPT whole(c);
  whole.set_imputation(Impute::Stale);
  AdamW opt(ao);
  train(whole, opt, 0, 4);
  save_checkpoint(path, whole, &opt, {4, 0, {}});
  std::vector<double> expected = train(whole, opt, 4, 8);

  // The state file holds the means of every row-split layer (the weights file stays Hugging Face's).
  SafetensorsFile state = read_safetensors(path + ".state");
  for (const Linear* l : whole.row_split_layers()) {
    INFO(l->prefix());
    CHECK(state.tensors.count(l->weight.name + ".stale_mean") == 1);
  }
  for (const auto& [name, t] : read_safetensors(path).tensors) CHECK(name.find("stale") == std::string::npos);

  GPT resumed(c);
  resumed.set_imputation(Impute::Stale);
  AdamW opt2(ao);
  CHECK(load_checkpoint(path, resumed, &opt2).step == 4);
  std::vector<double> got = train(resumed, opt2, 4, 8);
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("step ", 4 + i, ": ", got[i], " vs ", expected[i]);
    CHECK(std::abs(got[i] - expected[i]) <= 1e-12);
  }
  std::vector<Parameter*> a = resumed.parameters(), b = whole.parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i]->name);
    test::check_close(a[i]->value, b[i]->value, 1e-12);
  }
  CHECK(means(resumed) == means(whole));

  // Means of the wrong shape are refused, naming the tensor.
  std::vector<std::pair<std::string, Tensor>> kept;
  for (const auto& [name, t] : state.tensors)
    kept.push_back({name, name == "h.1.mlp.c_proj.weight.stale_mean" ? slice_rows(t, 0, 1).clone() : t});
  write_safetensors(path + ".state", kept, state.metadata);
  GPT again(c);
  AdamW opt3(ao);
  CHECK_THROWS_WITH_AS(load_checkpoint(path, again, &opt3),
                       doctest::Contains("tensor 'h.1.mlp.c_proj.weight.stale_mean' has shape"), Error);
}

TEST_CASE("a checkpoint without stale means (zero imputation, or older) loads and leaves none") {
  test::TempDir dir("stale-none");
  std::string path = dir.file("m.safetensors");
  GPT plain(tiny());
  AdamW opt({0.9, 0.999, 1e-8, 0.1});
  train(plain, opt, 0, 3);
  save_checkpoint(path, plain, &opt, {3, 0, {}});
  for (const auto& [name, t] : read_safetensors(path + ".state").tensors) CHECK(name.find("stale") == std::string::npos);
  GPT stale(tiny());
  stale.set_imputation(Impute::Stale);
  stale.loss(ids(1), ids(2));
  REQUIRE_FALSE(means(stale).empty());
  AdamW opt2({0.9, 0.999, 1e-8, 0.1});
  CHECK(load_checkpoint(path, stale, &opt2).step == 3);
  CHECK(means(stale).empty());  // the checkpoint's state: no means yet, training rebuilds them
}

// Priority resizing, the mechanism: active-first order, shrunk GEMMs, skipped units untouched by
// the optimizer and restored exactly, and no change at all when nothing is skipped.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/autograd.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape_ops.h"
#include "nn/gpt.h"
#include "optim/optimizer.h"
#include "nn/units.h"
#include "parallel/balance/active_units.h"
#include "parallel/balance/resizer.h"
#include "parallel/tp/unit_gather.h"
#include "tests/gradcheck.h"
#include "tests/resize_gpt.h"

using namespace flextp;

namespace {
GPTConfig tiny() { return test::resize_test_config(DType::F32); }
Tensor ids(uint64_t seed) {
  std::vector<int32_t> v(2 * 8);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((i * 7 + seed * 3) % 16);
  return Tensor::from_vector(v, {2, 8});
}
void step(GPT& m, Optimizer& opt, uint64_t seed) {
  std::vector<Parameter*> params = m.parameters();
  m.loss(ids(seed), ids(seed + 1)).backward();
  opt.step(params, 1e-2);
  for (Parameter* p : params) p->value.zero_grad();
}
}  // namespace

TEST_CASE("reordering units changes nothing the model computes") {
  GPT a(tiny()), b(tiny());
  std::vector<Parameter*> pb = b.parameters();
  reorder_units(group_parameters(pb, "h.0.head"), {2, 0, 3, 1});
  reorder_units(group_parameters(pb, "h.1.mlp"), {3, 1, 2, 0});
  CHECK(b.blocks()[0]->attn.heads() == std::vector<int64_t>{2, 0, 3, 1});
  NoGradGuard ng;
  test::check_close(b.loss(ids(1), ids(2)), a.loss(ids(1), ids(2)), 1e-6);
  CHECK_THROWS_WITH_AS(reorder_units(group_parameters(pb, "h.0.head"), {0, 1, 2}),
                       doctest::Contains("not a permutation"), Error);
}

TEST_CASE("skipping units shrinks the GEMMs and leaves their weights and Adam state untouched") {
  GPT m(tiny());
  AdamW opt({0.9, 0.999, 1e-8, 0.1});
  step(m, opt, 1);  // the optimizer state exists
  std::vector<Parameter*> params = m.parameters();
  std::vector<Parameter*> heads = group_parameters(params, "h.0.head"), mlp = group_parameters(params, "h.1.mlp");
  set_active_units(heads, 1);
  set_active_units(mlp, 2);
  CHECK(heads.front()->active_units() == 1);
  CHECK(m.blocks()[0]->attn.active_heads() == 1);
  CHECK(heads[0]->active_rows == 3 * 4);  // one head: its q, k, v rows (D = 4)
  // The QKV product really is [B, T, 1 * 3D]: the attention op sees one head.
  Tensor x = Tensor::randn({2, 8, 16}, 3);
  CHECK(m.blocks()[0]->attn.c_attn.forward(x).shape() == Shape{2, 8, 12});
  // Every tensor an update may touch: the value and each optimizer slot, skipped rows and active.
  std::vector<Parameter*> resized = heads;
  resized.insert(resized.end(), mlp.begin(), mlp.end());
  auto tensors = [&](Parameter* p) {
    std::vector<std::pair<std::string, Tensor>> out{{"value", p->value}};
    for (const std::string& s : opt.slot_names()) out.push_back({s, p->state.at(s)});
    return out;
  };
  auto skipped_rows = [](Parameter* p, const Tensor& t) {
    return slice_rows(t, p->active_rows, p->value.size(0) - p->active_rows).to_vector<float>();
  };
  auto active_rows = [](Parameter* p, const Tensor& t) { return slice_rows(t, 0, p->active_rows).to_vector<float>(); };
  std::vector<std::vector<float>> skipped_before, active_before;
  for (Parameter* p : resized)
    for (const auto& [name, t] : tensors(p)) {
      skipped_before.push_back(skipped_rows(p, t));
      active_before.push_back(active_rows(p, t));
    }
  step(m, opt, 2);
  step(m, opt, 3);
  size_t k = 0;
  for (Parameter* p : resized)
    for (const auto& [name, t] : tensors(p)) {
      std::string what = p->name + " " + name;
      INFO(what);
      CHECK(skipped_rows(p, t) == skipped_before[k]);  // frozen: weights, m and v alike
      // ... while every active row of the same tensors moved (the steps were real ones, and
      // reached the last active row).
      std::vector<float> now = active_rows(p, t);
      size_t width = now.size() / p->active_rows, unmoved = 0;
      for (size_t r = 0; r < static_cast<size_t>(p->active_rows); ++r)
        unmoved += std::equal(now.begin() + r * width, now.begin() + (r + 1) * width, active_before[k].begin() + r * width);
      CHECK(unmoved == 0);
      ++k;
    }
  // Restored: all units compute again, with the weights they had.
  set_active_units(heads, -1);
  set_active_units(mlp, -1);
  CHECK(m.blocks()[0]->attn.active_heads() == 4);
  CHECK_FALSE(heads[0]->resized());
}

TEST_CASE("units skipped out of order come back with their weights, m and v, in their places") {
  GPT m(tiny());
  AdamW opt({0.9, 0.999, 1e-8, 0.1});
  step(m, opt, 1);
  std::vector<Parameter*> mlp = group_parameters(m.parameters(), "h.0.mlp");
  // Unit u's rows of a tensor in logical order (whatever the local order is).
  auto unit_rows = [](Parameter* p, const Tensor& local, int64_t u) {
    Tensor all = gather_logical(*p, local, nullptr);
    return slice_rows(all, u * p->unit_rows(), p->rows_of_unit(u)).to_vector<float>();
  };
  auto tensors = [&](Parameter* p) {
    std::vector<std::pair<std::string, Tensor>> out{{"value", p->value}};
    for (const std::string& s : opt.slot_names()) out.push_back({s, p->state.at(s)});
    return out;
  };
  std::vector<std::vector<float>> before;
  for (Parameter* p : mlp)
    for (const auto& [name, t] : tensors(p))
      for (int64_t u = 0; u < 4; ++u) before.push_back(unit_rows(p, t, u));
  reorder_units(mlp, {3, 1, 0, 2});
  set_active_units(mlp, 2);  // 3 and 1 train; 0 and 2 are skipped
  step(m, opt, 2);
  step(m, opt, 3);
  reorder_units(mlp, {2, 0, 1, 3});
  set_active_units(mlp, -1);
  size_t k = 0;
  for (Parameter* p : mlp)
    for (const auto& [name, t] : tensors(p))
      for (int64_t u = 0; u < 4; ++u) {
        std::string what = p->name + " " + name + " unit " + std::to_string(u);
        INFO(what);
        bool skipped = u == 0 || u == 2;
        CHECK((unit_rows(p, t, u) == before[k++]) == skipped);
      }
}

TEST_CASE("with no unit skipped the model is the plain one, to the bit") {
  GPT a(tiny()), b(tiny());
  std::vector<Parameter*> pb = b.parameters();
  set_active_units(group_parameters(pb, "h.0.head"), 4);  // all of them
  NoGradGuard ng;
  CHECK(a.loss(ids(4), ids(5)).item() == b.loss(ids(4), ids(5)).item());
  CHECK_THROWS_WITH_AS(set_active_units(group_parameters(pb, "h.0.head"), 5), doctest::Contains("5 of 4"), Error);
}

TEST_CASE("the resizer skips the least important units of a slow rank, and restores them") {
  GPTConfig c = tiny();
  GPT m(c);
  std::vector<Parameter*> params = m.parameters();
  Partition p = Partition::even(unit_groups(c), 2);  // two ranks; this process plays rank 1's part
  // Norm priority: make head 2 of layer 0 the weakest by shrinking its QKV rows.
  std::vector<Parameter*> heads = group_parameters(params, "h.0.head");
  {
    NoGradGuard ng;
    Tensor rows = slice_rows(heads[0]->value, 2 * 12, 12);
    rows.copy_from(scale(rows, 0.01));
  }
  ResizeOptions o;
  o.priority = "norm";
  Resizer r(o);
  r.observe(params, 0);
  CHECK(r.importance("h.0.head", 2) < r.importance("h.0.head", 0));
  // Here this process holds all 4 heads as rank 0 would; ask for rank 0 at half speed.
  const std::vector<int> alone(c.n_head, 0);
  CHECK(r.keep_count(alone, {1.0}, 0) == c.n_head);  // alone, nothing to wait for
  CHECK(r.resize(params, {{"h.0.head", r.keep_count(alone, {1.0}, 0)}}).empty());
  Partition two = Partition::even(unit_groups(c), 2);
  // Speeds [0.5, 1], 2 heads each: rank 0 needs 4 time units where rank 1 needs 2 (beyond the 25%
  // dead band), so it keeps floor(2 * 0.5) = 1 of its units.
  std::vector<int> half(c.n_head, 0);
  for (int64_t u = 0; u < c.n_head; ++u) half[u] = u < c.n_head / 2 ? 0 : 1;
  two.set_owners("h.0.head", half);
  CHECK(r.keep_count(half, {0.5, 1.0}, 0) == 1);
  CHECK(r.resize(params, {{"h.0.head", r.keep_count(half, {0.5, 1.0}, 0)}}) == std::map<std::string, int64_t>{{"h.0.head", 3}});
  CHECK(heads.front()->active_units() == 1);
  // The one kept is the most important head, first in every parameter of the group.
  int64_t best = 0;
  for (int64_t u = 1; u < c.n_head; ++u)
    if (r.importance("h.0.head", u) > r.importance("h.0.head", best)) best = u;
  CHECK(heads[0]->units.front() == best);
  for (Parameter* q : heads) {
    INFO(q->name);
    CHECK(q->units == heads[0]->units);
    CHECK(q->active_rows == q->rows_of_unit(best));
  }
  // The weakest head (2) is among the skipped ones.
  std::vector<int64_t> skipped_units(heads[0]->units.begin() + 1, heads[0]->units.end());
  CHECK(std::find(skipped_units.begin(), skipped_units.end(), 2) != skipped_units.end());
  // Nobody to wait for any more: everything comes back.
  CHECK(r.resize(params, {}).empty());
  CHECK(heads.front()->active_units() == 4);
  // Within the dead band (a rank 20% slow, the noise of a shared machine) nothing is skipped.
  CHECK(r.keep_count({0, 0, 0, 0, 1, 1, 1, 1}, {0.8, 1.0}, 0) == 4);
  CHECK(r.keep_count({0, 0, 0, 0, 1, 1, 1, 1}, {0.7, 1.0}, 0) == 2);  // 4 / 0.7 > 4 x 1.25: floor(4 x 0.7)
  CHECK(r.keep_count({0, 0, 0, 0, 1, 1, 1, 1}, {0.7, 1.0}, 1) == 4);
  CHECK_THROWS_WITH_AS(Resizer(ResizeOptions{"loud"}), doctest::Contains("resizing priority 'loud' is not one of"), Error);
}

TEST_CASE("a model with skipped units has the gradient of finite differences (f64)") {
  for (Device d : test::devices()) {
    INFO("on ", d.str());
    GPTConfig c = tiny();
    c.dtype = DType::F64;
    c.n_embd = 8;  // 4 heads of 2, 4 MLP units of 8: small enough to check many entries
    c.mlp_unit = 8;
    GPT model(c);
    model.to(d);
    std::vector<Parameter*> params = model.parameters();
    // Skipped units in every kind of group, out of their initial order.
    reorder_units(group_parameters(params, "h.0.head"), {2, 0, 3, 1});
    set_active_units(group_parameters(params, "h.0.head"), 2);
    set_active_units(group_parameters(params, "h.1.head"), 3);
    reorder_units(group_parameters(params, "h.1.mlp"), {1, 3, 0, 2});
    set_active_units(group_parameters(params, "h.1.mlp"), 1);
    std::vector<Tensor> values;
    for (Parameter* p : params) values.push_back(p->value);
    // The inputs are the parameters themselves: the harness perturbs them in place.
    test::GradCheck opts;
    opts.eps = 3e-6;  // a whole GPT, as in test_gpt: its first LayerNorm bends on the embeddings' scale
    opts.max_entries = 32;
    test::check_gradients_here([&](const std::vector<Tensor>&) { return model.loss(ids(3), ids(4)); }, values, opts);
    // The skipped rows take no gradient at all.
    int64_t resized = 0;
    for (Parameter* p : params) {
      if (!p->resized()) continue;
      INFO(p->name);
      ++resized;
      Tensor g = slice_rows(p->grad(), p->active_rows, p->value.size(0) - p->active_rows).to(Device::cpu());
      std::vector<double> v = g.to_vector<double>();
      CHECK(std::all_of(v.begin(), v.end(), [](double x) { return x == 0.0; }));
    }
    CHECK(resized == 3 * 3);  // c_attn weight and bias and c_proj weight; c_fc weight and bias and c_proj weight
  }
}

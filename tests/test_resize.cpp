// Priority resizing, the mechanism: active-first order, shrunk GEMMs, skipped units untouched by
// the optimizer and restored exactly, and no change at all when nothing is skipped.
#include <doctest/doctest.h>

#include "core/autograd.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape_ops.h"
#include "nn/gpt.h"
#include "optim/optimizer.h"
#include "nn/units.h"
#include "parallel/resize.h"
#include "parallel/resizer.h"
#include "parallel/unit_gather.h"
#include "tests/gradcheck.h"

using namespace flextp;

namespace {
GPTConfig tiny() {
  GPTConfig c;
  c.vocab_size = 16;
  c.vocab_unit = 8;
  c.n_positions = 8;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 16;
  c.mlp_unit = 16;
  return c;
}
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
  CHECK(active_units(heads) == 1);
  CHECK(m.blocks()[0]->attn.active_heads() == 1);
  CHECK(heads[0]->active_rows == 3 * 4);  // one head: its q, k, v rows (D = 4)
  // The QKV product really is [B, T, 1 * 3D]: the attention op sees one head.
  Tensor x = Tensor::randn({2, 8, 16}, 3);
  CHECK(m.blocks()[0]->attn.c_attn.forward(x).shape() == Shape{2, 8, 12});
  std::vector<std::vector<float>> before;
  for (Parameter* p : heads) {
    before.push_back(slice_rows(p->value, p->active_rows, p->value.size(0) - p->active_rows).to_vector<float>());
    before.push_back(slice_rows(p->state.at("m"), p->active_rows, p->value.size(0) - p->active_rows).to_vector<float>());
  }
  std::vector<float> active_before = slice_rows(heads[0]->value, 0, heads[0]->active_rows).to_vector<float>();
  step(m, opt, 2);
  step(m, opt, 3);
  size_t k = 0;
  for (Parameter* p : heads) {
    INFO(p->name);
    CHECK(slice_rows(p->value, p->active_rows, p->value.size(0) - p->active_rows).to_vector<float>() == before[k++]);
    CHECK(slice_rows(p->state.at("m"), p->active_rows, p->value.size(0) - p->active_rows).to_vector<float>() == before[k++]);
  }
  CHECK(slice_rows(heads[0]->value, 0, heads[0]->active_rows).to_vector<float>() != active_before);
  // Restored: all units compute again, with the weights they had.
  set_active_units(heads, -1);
  set_active_units(mlp, -1);
  CHECK(m.blocks()[0]->attn.active_heads() == 4);
  CHECK_FALSE(heads[0]->resized());
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
  int64_t skipped = r.apply(params, Partition::even(unit_groups(c), 1), {1.0}, 0);
  CHECK(skipped == 0);  // alone, nothing to wait for
  Partition two = Partition::even(unit_groups(c), 2);
  // Speeds [0.5, 1], 2 heads each: rank 0 needs 4 time units where rank 1 needs 2 (beyond the 25%
  // dead band), so it keeps floor(2 * 0.5) = 1 of its units.
  std::vector<int> half(c.n_head, 0);
  for (int64_t u = 0; u < c.n_head; ++u) half[u] = u < c.n_head / 2 ? 0 : 1;
  two.set_owners("h.0.head", half);
  skipped = r.apply(params, two, {0.5, 1.0}, 0);
  CHECK(skipped > 0);
  CHECK(active_units(heads) == 1);
  CHECK(heads[0]->units.back() != heads[0]->units.front());
  // The weakest head (2) is among the skipped ones.
  std::vector<int64_t> skipped_units(heads[0]->units.begin() + 1, heads[0]->units.end());
  CHECK(std::find(skipped_units.begin(), skipped_units.end(), 2) != skipped_units.end());
  // Nobody to wait for any more: everything comes back.
  r.apply(params, Partition::even(unit_groups(c), 1), {1.0}, 0);
  CHECK(active_units(heads) == 4);
  // Within the dead band (a rank 20% slow, the noise of a shared machine) nothing is skipped.
  CHECK(r.keep_count({0, 0, 0, 0, 1, 1, 1, 1}, {0.8, 1.0}, 0) == 4);
  CHECK(r.keep_count({0, 0, 0, 0, 1, 1, 1, 1}, {0.7, 1.0}, 0) == 2);  // 4 / 0.7 > 4 x 1.25: floor(4 x 0.7)
  CHECK(r.keep_count({0, 0, 0, 0, 1, 1, 1, 1}, {0.7, 1.0}, 1) == 4);
  CHECK_THROWS_WITH_AS(Resizer(ResizeOptions{"loud"}), doctest::Contains("--priority 'loud'"), Error);
}

TEST_CASE("stale imputation adds a skipped unit's mean contribution; zero adds nothing") {
  GPTConfig c = tiny();
  GPT m(c);
  Linear& proj = m.blocks()[0]->mlp.c_proj;  // row split: 4 units of 16 inputs
  std::vector<Parameter*> group = group_parameters(m.parameters(), "h.0.mlp");
  // Every token the same: the mean contribution is the contribution.
  std::vector<float> row(64);
  for (int i = 0; i < 64; ++i) row[i] = 0.1f * static_cast<float>(i % 7) - 0.2f;
  std::vector<float> all;
  for (int t = 0; t < 6; ++t) all.insert(all.end(), row.begin(), row.end());
  Tensor x = Tensor::from_vector(all, {1, 6, 64});
  NoGradGuard ng;
  proj.set_impute(Impute::Stale);
  Tensor full = proj.forward(x);  // all active: records every unit's contribution
  CHECK(proj.stale_contribution(3) != nullptr);
  set_active_units(group, 2);  // units 2 and 3 skipped: the layer sees their 32 inputs no more
  std::vector<float> first32;
  for (int t = 0; t < 6; ++t) first32.insert(first32.end(), row.begin(), row.begin() + 32);
  Tensor xs = Tensor::from_vector(first32, {1, 6, 32});
  test::check_close(proj.forward(xs), full, 1e-5);  // stale: the same output
  proj.set_impute(Impute::Zero);
  Tensor zero = proj.forward(xs);
  double diff = 0;
  std::vector<float> a = zero.to_vector<float>(), b = full.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, double(std::abs(a[i] - b[i])));
  CHECK(diff > 1e-4);  // zero: the skipped units' share is missing
  set_active_units(group, -1);
}

// Priority resizing, the mechanism: active-first order, shrunk GEMMs, skipped units untouched by
// the optimizer and restored exactly, and no change at all when nothing is skipped.
#include <doctest/doctest.h>

#include "core/autograd.h"
#include "core/ops/shape_ops.h"
#include "nn/gpt.h"
#include "optim/optimizer.h"
#include "parallel/resize.h"
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

// The unit registry: the layers describe their groups once, the parameters point at them, and
// costs, resizing and the metrics read the registry's fields, never a group's name.
#include <doctest/doctest.h>

#include <set>

#include "nn/gpt.h"
#include "nn/gelu_mlp.h"
#include "nn/unit_costs.h"
#include "nn/units.h"
#include "parallel/balance/active_units.h"
#include "parallel/balance/resizer.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {
// 2 layers of 4 heads and 4 MLP blocks; 5 vocabulary blocks, the last one short.
GPTConfig tiny() { return test::tiny_config(DType::F32); }
}  // namespace

TEST_CASE("the registry holds every layer's heads and MLP blocks and the vocabulary, typed") {
  GPTConfig c = tiny();
  UnitRegistry r(c);
  REQUIRE(r.groups().size() == static_cast<size_t>(2 * c.n_layer + 1));
  std::set<std::string> names;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const UnitGroup& h = *r.group(UnitKind::Head, l);
    CHECK(h.layer == l);
    CHECK(h.units == c.n_head);
    CHECK(h.rows_per_unit == c.head_dim());
    CHECK(h.resizable);
    const UnitGroup& m = *r.group(UnitKind::Mlp, l);
    CHECK(m.layer == l);
    CHECK(m.units == c.n_mlp_units());
    CHECK(m.rows_per_unit == c.mlp_unit);
    CHECK(m.resizable);
    names.insert({h.name, m.name});
  }
  const UnitGroup& v = *r.group(UnitKind::Vocab);
  CHECK(v.units == 5);
  CHECK(v.layer == -1);
  CHECK_FALSE(v.resizable);
  names.insert(v.name);
  CHECK(names.size() == r.groups().size());  // every group has its own partition key
  for (const auto& g : r.groups()) CHECK(&r.named(g->name) == g.get());
  CHECK_THROWS_WITH_AS(r.group(UnitKind::Head, 7), doctest::Contains("no head units in layer 7"), Error);
  // The partition splits exactly the registry's groups.
  Partition p = Partition::even(unit_groups(c), 2);
  CHECK(p.groups().size() == r.groups().size());
  for (const auto& g : r.groups()) CHECK(p.owners(g->name).size() == static_cast<size_t>(g->units));
}

TEST_CASE("parameters with units point at their layer's group through one shared layout") {
  GPTConfig c = tiny();
  GPT m(c);
  const UnitRegistry& r = m.units();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Block& b = *m.blocks()[l];
    const GeluMlp& mlp = dynamic_cast<const GeluMlp&>(b.mlp);  // the default kind, gelu
    CHECK(&b.attn.c_attn.weight.group() == r.group(UnitKind::Head, l).get());
    CHECK(&b.attn.c_proj.weight.group() == r.group(UnitKind::Head, l).get());
    CHECK(&mlp.c_fc.weight.group() == r.group(UnitKind::Mlp, l).get());
    CHECK(&mlp.c_proj.weight.group() == r.group(UnitKind::Mlp, l).get());
    // A column-split weight and its bias share one layout; the row-split bias is replicated.
    CHECK(b.attn.c_attn.weight.layout == b.attn.c_attn.bias.layout);
    CHECK(mlp.c_fc.weight.layout == mlp.c_fc.bias.layout);
    CHECK(mlp.c_proj.bias.replicated());
    CHECK(b.attn.c_attn.weight.unit_rows() == 3 * c.head_dim());
    CHECK(b.attn.c_proj.weight.unit_rows() == c.head_dim());
    CHECK(b.attn.c_attn.weight.layout->hf == HfLayout::Conv1DQkv);
    CHECK(mlp.c_fc.weight.layout->hf == HfLayout::Conv1D);
    CHECK(mlp.c_proj.weight.layout->hf == HfLayout::AsIs);
  }
  CHECK(&m.wte.group() == r.group(UnitKind::Vocab).get());
  CHECK(m.wte.logical_rows() == c.vocab_size);
  CHECK(m.wte.rows_of_unit(4) == 5);  // the short last block
  CHECK(m.wpe.replicated());
}

TEST_CASE("the planner's costs are the ones each layer gives its units") {
  GPTConfig c = tiny();
  StepShape s{4, 8, 2};
  UnitRegistry r(c, s);
  ModelCosts costs = gpt_model_costs(c, s);
  REQUIRE(costs.groups.size() == r.groups().size());
  for (const auto& g : r.groups()) {
    INFO(g->name);
    CHECK(costs.unit(g->name).work == g->cost.work);
    CHECK(costs.unit(g->name).bytes == g->cost.bytes);
    CHECK(g->cost.work > 0);
  }
  // An MLP block of M neurons carries M rows of c_fc, M of its bias and M rows of c_proj, each
  // value with its two optimizer slots.
  double m = c.mlp_unit, ch = c.n_embd;
  CHECK(r.group(UnitKind::Mlp, 1)->cost.bytes == (2 * m * ch + m) * 4 * 3);
  CHECK(r.group(UnitKind::Vocab)->cost.bytes == c.vocab_unit * ch * 4 * 3);
  CHECK(UnitRegistry(c).group(UnitKind::Head, 0)->cost.work == 0);  // no step shape, no cost
}

TEST_CASE("units per kind come by name") {
  GPTConfig c = tiny();
  std::vector<UnitGroup> groups = unit_groups(c);
  Partition p = Partition::even(groups, 2);
  apply_tp_assignment(p, groups, "vocab=0-4|");
  UnitCounts zero = units_per_kind(groups, p, 0), one = units_per_kind(groups, p, 1);
  CHECK(zero.held == std::map<UnitKind, int64_t>{{UnitKind::Head, 4}, {UnitKind::Mlp, 4}, {UnitKind::Vocab, 5}});
  CHECK(one.held == std::map<UnitKind, int64_t>{{UnitKind::Head, 4}, {UnitKind::Mlp, 4}, {UnitKind::Vocab, 0}});
  CHECK(zero.named() == std::map<std::string, int64_t>{{"head", 4}, {"mlp", 4}, {"vocab", 5}, {"skipped", 0}});
  // The monitor's counts, the skipped units with them, as the metrics file names them.
  UnitCounts resized = one;
  resized.skipped = 2;
  CHECK(resized.named() == std::map<std::string, int64_t>{{"head", 4}, {"mlp", 4}, {"vocab", 0}, {"skipped", 2}});
}

TEST_CASE("the resizer skips only groups the registry marks resizable, whatever their names") {
  GPTConfig c = tiny();
  GPT m(c);
  std::vector<Parameter*> params = m.parameters();
  // A head group whose layer declares it not resizable: a copy of layer 0's heads, marked so.
  auto fixed = std::make_shared<UnitGroup>(*m.units().group(UnitKind::Head, 0));
  fixed->resizable = false;
  for (Parameter* p : group_parameters(params, "h.0.head")) {
    auto layout = std::make_shared<UnitLayout>(*p->layout);
    layout->group = fixed;
    p->layout = layout;
  }
  Partition two = Partition::even(unit_groups(c), 2);
  for (const auto& g : m.units().groups()) two.set_owners(g->name, std::vector<int>(g->units, 0));
  // Rank 0 runs at a quarter of rank 1's speed with as many heads of either layer.
  two.set_owners("h.1.head", {0, 0, 1, 1});
  two.set_owners("h.0.head", {0, 0, 1, 1});
  Resizer r(ResizeOptions{"norm"});
  r.observe(params, 0);
  const int64_t keep = r.keep_count(two.owners("h.1.head"), {0.25, 1.0}, 0);
  CHECK(r.resize(params, {{"h.0.head", keep}, {"h.1.head", keep}}) == std::map<std::string, int64_t>{{"h.1.head", 4 - keep}});
  CHECK(group_parameters(params, "h.0.head").front()->active_units() == 4);  // declared fixed: untouched
  CHECK(group_parameters(params, "h.1.head").front()->active_units() < 4);   // the same shape, resizable
}

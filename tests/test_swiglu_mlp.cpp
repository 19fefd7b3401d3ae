// The SwiGLU MLP, the worked example of a layer kind added by one file and one registration: what
// it computes, that its neuron blocks are MLP units like the GELU MLP's (one group for its three
// matrices, a block's rows aligned in each), what a block costs, and the registry's lookup.
#include <doctest/doctest.h>

#include <cmath>

#include "core/autograd.h"
#include "nn/gpt.h"
#include "nn/swiglu_mlp.h"
#include "nn/unit_costs.h"
#include "tests/gradcheck.h"

using namespace flextp;

namespace {
// 2 layers of 4 heads and 4 MLP blocks of 8 neurons (hidden 4C = 32).
GPTConfig tiny(DType dtype = DType::F64) {
  GPTConfig c;
  c.vocab_size = 11;
  c.vocab_unit = 4;
  c.n_positions = 6;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 8;
  c.mlp_unit = 8;
  c.mlp = "swiglu";
  c.dtype = dtype;
  return c;
}
const SwiGluMlp& swiglu(const Block& b) { return dynamic_cast<const SwiGluMlp&>(b.mlp); }
}  // namespace

TEST_CASE("the SwiGLU MLP computes c_proj(silu(c_gate x) * c_up x), biases included") {
  GPTConfig c = tiny();
  GPT m(c);
  const SwiGluMlp& mlp = swiglu(*m.blocks()[1]);
  // Biases are zero at initialisation: give them values, so that a dropped one shows.
  for (const Linear* l : {&mlp.c_gate, &mlp.c_up, &mlp.c_proj}) {
    Tensor b = Tensor::randn(l->bias.value.shape(), 77, 3, 0, 0.5, DType::F64);
    l->bias.value.detach().copy_from(b);
  }
  const int64_t n = 3, ch = c.n_embd, h = c.mlp_hidden();
  Tensor x = Tensor::randn({1, n, ch}, 5, 1, 0, 1, DType::F64);
  NoGradGuard ng;
  std::vector<double> got = mlp.forward(x).to_vector<double>();
  std::vector<double> xs = x.to_vector<double>(), wg = mlp.c_gate.weight.value.to_vector<double>(),
                      bg = mlp.c_gate.bias.value.to_vector<double>(), wu = mlp.c_up.weight.value.to_vector<double>(),
                      bu = mlp.c_up.bias.value.to_vector<double>(), wd = mlp.c_proj.weight.value.to_vector<double>(),
                      bd = mlp.c_proj.bias.value.to_vector<double>();
  REQUIRE(wd.size() == static_cast<size_t>(h * ch));  // row split: [hidden, C]
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < ch; ++o) {
      double y = bd[o];
      for (int64_t j = 0; j < h; ++j) {
        double g = bg[j], u = bu[j];
        for (int64_t i = 0; i < ch; ++i) g += xs[t * ch + i] * wg[j * ch + i], u += xs[t * ch + i] * wu[j * ch + i];
        y += g / (1 + std::exp(-g)) * u * wd[j * ch + o];
      }
      INFO("token ", t, " output ", o);
      CHECK(got[t * ch + o] == doctest::Approx(y).epsilon(1e-12));
    }
}

TEST_CASE("the SwiGLU MLP's neuron blocks are MLP units: one group for its three matrices") {
  GPTConfig c = tiny();
  GPT m(c);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const SwiGluMlp& mlp = swiglu(*m.blocks()[l]);
    const UnitGroup* group = m.units().group(UnitKind::Mlp, l).get();
    CHECK(group->name == "h." + std::to_string(l) + ".mlp");  // the partition's key, as the GELU MLP's
    CHECK(group->units == 4);
    CHECK(group->resizable);
    for (const Linear* lin : {&mlp.c_gate, &mlp.c_up, &mlp.c_proj}) {
      INFO(lin->prefix());
      CHECK(&lin->weight.group() == group);
      CHECK(lin->weight.unit_rows() == c.mlp_unit);
      CHECK(lin->weight.units == std::vector<int64_t>{0, 1, 2, 3});
    }
    CHECK(mlp.c_gate.bias.layout == mlp.c_gate.weight.layout);
    CHECK(mlp.c_up.bias.layout == mlp.c_up.weight.layout);
    CHECK(mlp.c_proj.bias.replicated());
    CHECK(mlp.c_gate.weight.layout->hf == HfLayout::Conv1D);
    CHECK(mlp.c_up.weight.layout->hf == HfLayout::Conv1D);
    CHECK(mlp.c_proj.weight.layout->hf == HfLayout::AsIs);
  }
  // Its units carry rows of three matrices and two biases, each value with its optimizer slots.
  StepShape s{4, 6, 2};
  double mu = c.mlp_unit, ch = c.n_embd;
  CHECK(UnitRegistry(c, s).group(UnitKind::Mlp, 0)->cost.bytes == (3 * mu * ch + 2 * mu) * 8 * 3);
  // At a width where the matrix products dominate, a block costs about 1.5x a GELU block (three
  // products instead of two).
  GPTConfig wide = c, gelu = c;
  wide.n_embd = gelu.n_embd = 128;
  gelu.mlp = "gelu";
  double w_swiglu = UnitRegistry(wide, s).group(UnitKind::Mlp, 0)->cost.work;
  double w_gelu = UnitRegistry(gelu, s).group(UnitKind::Mlp, 0)->cost.work;
  CHECK(w_swiglu > 1.4 * w_gelu);
  CHECK(w_swiglu < 1.6 * w_gelu);
}

TEST_CASE("a SwiGLU model holding its blocks in any order computes the same loss and gradients") {
  // Local order is what migration and resizing change: a block's gate, up and down rows must
  // follow it together.
  GPTConfig c = tiny();
  LocalUnits all = LocalUnits::all(c), shuffled = all;
  shuffled.mlp = {{2, 0, 3, 1}, {3, 2, 1, 0}};
  GPT a(c, all), b(c, shuffled);
  Tensor ids = Tensor::from_vector<int32_t>({1, 5, 10, 0, 3, 3}, {1, 6}), targets = Tensor::from_vector<int32_t>({5, 10, 0, 3, 3, 7}, {1, 6});
  Tensor la = a.loss(ids, targets), lb = b.loss(ids, targets);
  CHECK(la.item() == doctest::Approx(lb.item()).epsilon(1e-13));
  la.backward();
  lb.backward();
  std::vector<Parameter*> pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i]->name);
    if (pa[i]->replicated()) {
      test::check_close(pb[i]->grad(), pa[i]->grad(), 1e-12);
      continue;
    }
    // Unit u's rows sit at its place in b's local order.
    int64_t rows = pa[i]->unit_rows(), cols = pa[i]->value.numel() / pa[i]->value.size(0);
    std::vector<double> ga = pa[i]->grad().to_vector<double>(), gb = pb[i]->grad().to_vector<double>();
    for (size_t k = 0; k < pb[i]->units.size(); ++k) {
      int64_t u = pb[i]->units[k];
      for (int64_t r = 0; r < rows * cols; ++r)
        CHECK(gb[k * rows * cols + r] == doctest::Approx(ga[u * rows * cols + r]).epsilon(1e-10));
    }
  }
}

TEST_CASE("MLP kinds are looked up by name; an unknown one is refused with the known ones") {
  CHECK(mlp_kind_names() == std::vector<std::string>{"gelu", "swiglu"});
  CHECK(mlp_registration("gelu").gpt2_activation == "gelu_new");
  CHECK(mlp_registration("swiglu").gpt2_activation.empty());  // not GPT-2
  GPTConfig c = tiny();
  c.mlp = "relu";
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("no MLP kind is called 'relu'; the registered ones are gelu, swiglu"),
                       Error);
  CHECK_THROWS_WITH_AS(GPT{c}, doctest::Contains("no MLP kind is called 'relu'"), Error);
}

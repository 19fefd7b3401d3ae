// Stale imputation's running means are training state: only training forwards move them.
#include <doctest/doctest.h>

#include "core/autograd.h"
#include "nn/generate.h"
#include "parallel/resize.h"
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
  c.dtype = DType::F64;
  return c;
}
Tensor ids(uint64_t seed) {
  std::vector<int32_t> v(2 * 8);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((i * 7 + seed * 3 + i * i * seed) % 16);
  return Tensor::from_vector(v, {2, 8});
}

// Every known mean of every row-split layer, by layer and unit.
std::map<std::string, std::vector<double>> means(const GPT& m) {
  std::map<std::string, std::vector<double>> out;
  for (const Linear* l : m.row_split_layers())
    for (const auto& [u, t] : l->stale_means()) out[l->prefix() + " unit " + std::to_string(u)] = t.to_vector<double>();
  return out;
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

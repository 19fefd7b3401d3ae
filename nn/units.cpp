#include "nn/units.h"

#include <numeric>

namespace flextp {

LocalUnits LocalUnits::all(const GPTConfig& c) {
  auto range = [](int64_t n) {
    std::vector<int64_t> v(n);
    std::iota(v.begin(), v.end(), 0);
    return v;
  };
  LocalUnits u;
  u.heads.assign(c.n_layer, range(c.n_head));
  u.mlp.assign(c.n_layer, range(c.n_mlp_units()));
  u.vocab = range(c.n_vocab_units());
  return u;
}

LocalUnits LocalUnits::of_rank(const GPTConfig& c, const Partition& p, int rank) {
  LocalUnits u;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    u.heads.push_back(p.units_of("h." + std::to_string(l) + ".head", rank));
    u.mlp.push_back(p.units_of("h." + std::to_string(l) + ".mlp", rank));
  }
  u.vocab = p.units_of("vocab", rank);
  return u;
}

std::vector<UnitGroup> unit_groups(const GPTConfig& c) {
  std::vector<UnitGroup> g;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    g.push_back({"h." + std::to_string(l) + ".head", "head", c.n_head});
    g.push_back({"h." + std::to_string(l) + ".mlp", "mlp", c.n_mlp_units()});
  }
  g.push_back({"vocab", "vocab", c.n_vocab_units()});
  return g;
}

}  // namespace flextp

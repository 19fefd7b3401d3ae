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

}  // namespace flextp

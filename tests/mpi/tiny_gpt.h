#pragma once
// What the multi-rank tests share: a tiny GPT, its batches, the partitions they run, a
// per-tensor comparison, and the bytes a migration must move, counted from the model's
// definition rather than from the parameters the mover reads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/random.h"
#include "nn/gpt.h"
#include "nn/units.h"
#include "parallel/tp/partition.h"

namespace flextp::test {

// `mlp`: the MLP kind (every multi-rank test of MLP units runs for each kind).
inline GPTConfig tiny_config(DType dtype, const std::string& mlp = "gelu") {
  GPTConfig c;
  c.vocab_size = 37;  // 5 vocabulary units of 8, the last one short
  c.vocab_unit = 8;
  c.vocab_pad = 1;  // unpadded, so that the last unit is short
  c.n_positions = 8;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 16;
  c.mlp_unit = 16;  // 4 MLP units
  c.mlp = mlp;
  c.dtype = dtype;
  return c;
}

// The MLP kinds the multi-rank tests run.
inline const std::vector<std::string>& mlp_kinds() {
  static const std::vector<std::string> kinds{"gelu", "swiglu"};
  return kinds;
}

inline Tensor tokens(int64_t b, int64_t t, uint64_t seed) {
  std::vector<int32_t> v(b * t);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(rng::uniform(i, 3, seed) * 37);
  return Tensor::from_vector(v, {b, t});
}

// The partitions every test runs: even, proportional and uneven, and one with empty ranks.
inline std::vector<std::pair<std::string, Partition>> partitions(const GPTConfig& c, int n) {
  std::vector<UnitGroup> g = unit_groups(c);
  std::vector<double> w(n);
  for (int r = 0; r < n; ++r) w[r] = r == 0 ? 3.0 : 1.0 + r % 2;
  Partition zero = Partition::even(g, n);
  std::string bars(n - 1, '|');
  apply_tp_assignment(zero, g, "head@0=0-3" + bars);           // rank 0 all heads of layer 0
  apply_tp_assignment(zero, g, "mlp@1=" + bars + "0-3");       // the last rank all of layer 1's MLP
  apply_tp_assignment(zero, g, "vocab=" + bars + "0,2,4,1,3");  // all vocabulary on the last rank
  return {{"even", Partition::even(g, n)}, {"proportional", Partition::proportional(g, w)}, {"zero units", zero}};
}

// Owners drawn at random for every unit of every group (seeded: the same on every rank).
inline Partition random_partition(const GPTConfig& c, int n, uint64_t seed) {
  std::vector<UnitGroup> groups = unit_groups(c);
  Partition p = Partition::even(groups, n);
  uint64_t i = 0;
  for (const UnitGroup& g : groups) {
    std::vector<int> owners(g.units);
    for (int& o : owners) o = static_cast<int>(rng::uniform(i++, 11, seed) * n);
    p.set_owners(g.name, owners);
  }
  return p;
}

inline double relative(double a, double b) {
  return std::abs(a - b) / (1e-30 + std::max(std::abs(a), std::abs(b)));
}

// max |a - ref| / max |ref| over the tensor: a relative error per tensor, so that a tensor of
// small entries (Adam's v, ~1e-6) is held to the same standard as one of large entries.
inline double tensor_relative_error(const Tensor& a, const Tensor& ref) {
  auto f64 = [](const Tensor& t) { return (t.dtype() == DType::F64 ? t : t.to(DType::F64)).to_vector<double>(); };
  std::vector<double> u = f64(a), v = f64(ref);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    diff = std::max(diff, std::abs(u[i] - v[i]));
    scale = std::max(scale, std::abs(v[i]));
  }
  if (diff == 0) return 0;
  return scale > 0 ? diff / scale : std::numeric_limits<double>::infinity();
}

inline void check_same_tensor(const Tensor& a, const Tensor& ref, double tol, const std::string& what) {
  REQUIRE(a.shape() == ref.shape());
  double err = tensor_relative_error(a, ref);
  INFO(what, ": relative error ", err);
  CHECK(err <= tol);
}

// Elements of one unit over all its parameters, from the model's definition: a head has its
// Q, K and V rows (3D x C) with their bias (3D) and D rows of the out-projection (D x C); an MLP
// block of M neurons has M rows of c_fc (M x C) with their bias (M) and M rows of c_proj
// (M x C), a SwiGLU one M rows of c_gate and of c_up with their biases and M rows of c_proj; a
// vocabulary block has its rows of the tied embedding (rows x C), the last one short.
inline int64_t unit_elements(const GPTConfig& c, const std::string& kind, int64_t u) {
  if (kind == "vocab") return std::min(c.vocab_unit, c.vocab_size - u * c.vocab_unit) * c.n_embd;
  if (kind == "head") return 4 * c.head_dim() * c.n_embd + 3 * c.head_dim();
  if (kind == "mlp") {
    int64_t m = std::min(c.mlp_unit, c.mlp_hidden() - u * c.mlp_unit);
    if (c.mlp == "swiglu") return 3 * m * c.n_embd + 2 * m;
    REQUIRE(c.mlp == "gelu");
    return 2 * m * c.n_embd + m;
  }
  FAIL("unknown unit kind ", kind);
  return 0;
}

struct ExpectedMove {
  int64_t units = 0, bytes = 0;
};

// What moving from `from` to `to` must cost: every unit whose owner changes travels once, with
// its weights and `slots` optimizer tensors of the same shape, and nothing else travels.
inline ExpectedMove expected_move(const GPTConfig& c, const Partition& from, const Partition& to, int slots) {
  ExpectedMove e;
  for (const UnitGroup& g : unit_groups(c))
    for (int64_t u = 0; u < g.units; ++u)
      if (from.owners(g.name)[u] != to.owners(g.name)[u]) {
        ++e.units;
        e.bytes += unit_elements(c, unit_kind_name(g.kind), u) * (1 + slots) * static_cast<int64_t>(dtype_size(c.dtype));
      }
  return e;
}

}  // namespace flextp::test

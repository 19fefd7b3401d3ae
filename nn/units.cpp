#include "nn/units.h"

#include <numeric>

#include "core/error.h"
#include "nn/attention.h"
#include "nn/gpt.h"
#include "nn/mlp.h"

namespace flextp {

UnitRegistry::UnitRegistry(const GPTConfig& c, const StepShape& s) {
  for (int64_t l = 0; l < c.n_layer; ++l) {
    groups_.push_back(std::make_shared<UnitGroup>(CausalSelfAttention::unit_group(c, l, s)));
    groups_.push_back(std::make_shared<UnitGroup>(mlp_registration(c.mlp).unit_group(c, l, s)));
  }
  groups_.push_back(std::make_shared<UnitGroup>(GPT::vocab_unit_group(c, s)));
}

std::shared_ptr<const UnitGroup> UnitRegistry::group(UnitKind kind, int64_t layer) const {
  for (const auto& g : groups_)
    if (g->kind == kind && g->layer == layer) return g;
  FLEXTP_FAIL("the model has no ", unit_kind_name(kind), " units in layer ", layer);
}

const UnitGroup& UnitRegistry::named(const std::string& name) const {
  for (const auto& g : groups_)
    if (g->name == name) return *g;
  FLEXTP_FAIL("the model has no unit group '", name, "'");
}

std::vector<UnitGroup> UnitRegistry::partition_groups() const {
  std::vector<UnitGroup> out;
  for (const auto& g : groups_) out.push_back(*g);
  return out;
}

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
  UnitRegistry r(c);
  LocalUnits u;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    u.heads.push_back(p.units_of(r.group(UnitKind::Head, l)->name, rank));
    u.mlp.push_back(p.units_of(r.group(UnitKind::Mlp, l)->name, rank));
  }
  u.vocab = p.units_of(r.group(UnitKind::Vocab)->name, rank);
  return u;
}

std::vector<UnitGroup> unit_groups(const GPTConfig& c) { return UnitRegistry(c).partition_groups(); }

}  // namespace flextp

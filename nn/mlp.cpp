#include "nn/mlp.h"

#include <cmath>

#include "core/error.h"

namespace flextp {

#define FLEXTP_MLP(kind) MlpRegistration kind##_mlp_registration();
#include "nn/mlp_kinds.h"
#undef FLEXTP_MLP

namespace {

const std::vector<MlpRegistration>& registry() {
  static const std::vector<MlpRegistration> kinds = [] {
    std::vector<MlpRegistration> out;
#define FLEXTP_MLP(kind) out.push_back(kind##_mlp_registration()), out.back().name = #kind;
#include "nn/mlp_kinds.h"
#undef FLEXTP_MLP
    return out;
  }();
  return kinds;
}

}  // namespace

LinearSpec mlp_column_spec(const GPTConfig& c, std::shared_ptr<const UnitGroup> group,
                           const std::vector<int64_t>& blocks) {
  return {c.n_embd, c.mlp_hidden(), Split::Column, std::move(group), c.mlp_unit, blocks, 0.02, HfLayout::Conv1D};
}

LinearSpec mlp_row_spec(const GPTConfig& c, std::shared_ptr<const UnitGroup> group,
                        const std::vector<int64_t>& blocks) {
  return {c.mlp_hidden(), c.n_embd, Split::Row, std::move(group), c.mlp_unit, blocks,
          0.02 / std::sqrt(2.0 * c.n_layer), HfLayout::AsIs};
}

UnitGroup mlp_unit_group(const GPTConfig& c, int64_t layer, UnitCost cost) {
  return {block_name(layer) + ".mlp", UnitKind::Mlp, layer, c.n_mlp_units(), c.mlp_unit, true, cost};
}

std::vector<std::string> mlp_kind_names() {
  std::vector<std::string> names;
  for (const MlpRegistration& k : registry()) names.push_back(k.name);
  return names;
}

const MlpRegistration& mlp_registration(const std::string& kind) {
  std::string known;
  for (const MlpRegistration& k : registry()) {
    if (k.name == kind) return k;
    known += (known.empty() ? "" : ", ") + k.name;
  }
  FLEXTP_FAIL("no MLP kind is called '", kind, "'; the registered ones are ", known);
}

}  // namespace flextp

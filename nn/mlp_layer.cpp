#include "nn/mlp_layer.h"

#include <cmath>

#include "core/error.h"

namespace flextp {

#define FLEXTP_MLP(kind) MlpKind kind##_mlp_kind();
#include "nn/mlp_kinds.h"
#undef FLEXTP_MLP

namespace {

const std::vector<MlpKind>& registry() {
  static const std::vector<MlpKind> kinds = [] {
    std::vector<MlpKind> out;
#define FLEXTP_MLP(kind) out.push_back(kind##_mlp_kind()), out.back().name = #kind;
#include "nn/mlp_kinds.h"
#undef FLEXTP_MLP
    return out;
  }();
  return kinds;
}

}  // namespace

LinearSpec mlp_column_spec(const GPTConfig& c, std::shared_ptr<const UnitGroupInfo> group,
                           const std::vector<int64_t>& blocks) {
  return {c.n_embd, c.mlp_hidden(), Split::Column, std::move(group), c.mlp_unit, blocks, 0.02, HfLayout::Conv1D};
}

LinearSpec mlp_row_spec(const GPTConfig& c, std::shared_ptr<const UnitGroupInfo> group,
                        const std::vector<int64_t>& blocks) {
  return {c.mlp_hidden(), c.n_embd, Split::Row, std::move(group), c.mlp_unit, blocks,
          0.02 / std::sqrt(2.0 * c.n_layer), HfLayout::AsIs};
}

UnitGroupInfo mlp_unit_group(const GPTConfig& c, int64_t layer, UnitCost cost) {
  return {block_name(layer) + ".mlp", UnitKind::Mlp, layer, c.n_mlp_units(), c.mlp_unit, true, cost};
}

std::vector<std::string> mlp_kind_names() {
  std::vector<std::string> names;
  for (const MlpKind& k : registry()) names.push_back(k.name);
  return names;
}

const MlpKind& mlp_kind(const std::string& name) {
  std::string known;
  for (const MlpKind& k : registry()) {
    if (k.name == name) return k;
    known += (known.empty() ? "" : ", ") + k.name;
  }
  FLEXTP_FAIL("no MLP kind is called '", name, "'; the registered ones are ", known);
}

}  // namespace flextp

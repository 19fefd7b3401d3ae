#include "nn/mlp_layer.h"

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

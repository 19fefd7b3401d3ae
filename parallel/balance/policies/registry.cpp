#include <utility>

#include "core/error.h"
#include "parallel/balance/policy.h"

namespace flextp {

#define FLEXTP_POLICY(name) std::unique_ptr<BalancePolicy> make_##name##_policy(const BalanceOptions&);
#include "parallel/balance/policies/registered.h"
#undef FLEXTP_POLICY

namespace {

using PolicyMaker = std::unique_ptr<BalancePolicy> (*)(const BalanceOptions&);

const std::vector<std::pair<std::string, PolicyMaker>>& registry() {
  static const std::vector<std::pair<std::string, PolicyMaker>> policies = {
#define FLEXTP_POLICY(name) {#name, make_##name##_policy},
#include "parallel/balance/policies/registered.h"
#undef FLEXTP_POLICY
  };
  return policies;
}

}  // namespace

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.first);
  return names;
}

std::unique_ptr<BalancePolicy> make_policy(const BalanceOptions& o) {
  std::string known;
  for (const auto& [name, make] : registry()) {
    if (name == o.policy) return make(o);
    known += (known.empty() ? "" : ", ") + name;
  }
  FLEXTP_FAIL("no balancing policy is called '", o.policy, "'; the registered ones are ", known);
}

}  // namespace flextp

// --balance none: measure only. Megatron's fixed split; the baseline the others are measured by.
#include "parallel/balance/policy.h"

namespace flextp {
namespace {

class NonePolicy : public BalancePolicy {
 public:
  Decision decide(const Observation& o) override { return keep_at(o, o.speeds); }
};

}  // namespace

std::unique_ptr<BalancePolicy> make_none_policy(const BalanceOptions&) { return std::make_unique<NonePolicy>(); }

}  // namespace flextp

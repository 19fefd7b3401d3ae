// --balance proportional: the worked example that docs/policies.md shows whole. It
// watches the ranks for a warm-up, then moves units once so that in every group each rank holds
// units in proportion to its measured speed, and keeps that partition for the rest of the run.
// Lossless (nothing is skipped); it suits a machine whose ranks differ for good, not a passing
// slowdown (that is what migrate and hybrid are for).
#include "parallel/balance/policy.h"

namespace flextp {
namespace {

class ProportionalPolicy : public BalancePolicy {
 public:
  Decision decide(const Observation& o) override {
    // Every rank sees the same step and speeds, so all decide alike, in the same step.
    if (done_ || o.step < kWarmupSteps) return keep_at(o, o.speeds);
    done_ = true;
    // The planner's target is the proportional split (reached with the fewest moves); a long
    // horizon and no least gain make it move whenever the split makes the step faster at all.
    Plan plan = plan_migration(o.partition, o.speeds, o.model, o.comm, {kOnceForTheRun, 0.0});
    if (!plan.migrate) return keep_at(o, o.speeds);  // balanced already
    return migrate_by(plan);
  }

 private:
  static constexpr int64_t kWarmupSteps = 10;  // the monitor's average has settled by then
  static constexpr int64_t kOnceForTheRun = int64_t{1} << 40;  // the horizon: the move pays off for good
  bool done_ = false;
};

}  // namespace

std::unique_ptr<BalancePolicy> make_proportional_policy(const BalanceOptions&) {
  return std::make_unique<ProportionalPolicy>();
}

}  // namespace flextp

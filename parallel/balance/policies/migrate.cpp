// --balance migrate (lossless): once the monitor has settled, move whole units toward the fast
// ranks when the planner predicts that the move pays for itself within the horizon.
#include "parallel/balance/policy.h"

namespace flextp {
namespace {

class MigratePolicy : public BalancePolicy {
 public:
  explicit MigratePolicy(const BalanceOptions& o) : planner_(o.planner), settle_steps_(o.settle_steps) {}

  bool explores() const override { return true; }

  Decision decide(const Observation& o) override {
    if (o.since_move < settle_steps_) return keep_at(o, o.speeds);
    Plan plan = plan_migration(o.partition, o.speeds, o.model, o.comm, planner_);
    if (!plan.migrate) {
      Decision keep;
      keep.plan = plan;  // its target is the current partition
      return keep;
    }
    return migrate_by(plan);
  }

 private:
  PlannerOptions planner_;
  int64_t settle_steps_;
};

}  // namespace

std::unique_ptr<BalancePolicy> make_migrate_policy(const BalanceOptions& o) {
  return std::make_unique<MigratePolicy>(o);
}

}  // namespace flextp

// --balance resize (lossy, reversible, nothing moves): every rank keeps the units of each group
// it can finish in the time the fastest rank needs for its share and skips the least important
// rest. It reacts at once, on the last step's speeds (fast_speeds), so a slowdown is absorbed
// from the next step on, and runs every unit now and then as a probe.
#include "parallel/balance/policies/probe_schedule.h"
#include "parallel/balance/policy.h"

namespace flextp {
namespace {

class ResizePolicy : public BalancePolicy {
 public:
  explicit ResizePolicy(const BalanceOptions& o) : probes_(o.probe_first, o.probe_max) {}

  bool uses_importance() const override { return true; }

  Decision decide(const Observation& o) override {
    if (probes_.due(o.table)) return probe(o);
    Decision d = resize_to(o, o.fast_speeds);
    // The log's plan is on the smoothed speeds; the gain predicted for the resize, the last step's.
    const double gain = d.plan.now_ms > 0 ? 1 - d.plan.after_ms / d.plan.now_ms : 0.0;
    d.plan = keep_at(o, o.speeds).plan;
    d.plan.after_ms = d.plan.now_ms * (1 - gain);
    if (skipped_here(o, d) == 0) d.action = Action::keep;  // this rank is fast enough
    return d;
  }

 private:
  ProbeSchedule probes_;
};

}  // namespace

std::unique_ptr<BalancePolicy> make_resize_policy(const BalanceOptions& o) {
  return std::make_unique<ResizePolicy>(o);
}

}  // namespace flextp

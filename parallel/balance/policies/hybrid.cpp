// --balance hybrid: over the expected rest of a slowdown (as long again as it has lasted so far,
// at most the horizon) it compares
//   keep:    step x steps
//   resize:  step x steps + lambda x (share of importance skipped) x steps x a growth with the
//            episode's length (resize_price in hybrid.h: a long run of skipped steps costs more)
//   migrate: step x steps + transfer
// and takes the cheapest, so a short slowdown is absorbed by resizing and a lasting one is
// migrated away (the resized units return once the migration has balanced the ranks).
// lambda = infinity never drops work; lambda = 0 never moves weights.
// Resizing trades accuracy for time, so it starts only on a slowdown clear of the slowed rank's
// own noise (NoiseGate, parallel/balance/noise_gate.h: more than max(4 x its median absolute
// deviation, 30%), at most 45%, below the median of its recent quiet steps); once started it
// goes on, probing, for as long as the choice above says so.
#include "parallel/balance/policies/hybrid.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "parallel/balance/noise_gate.h"
#include "parallel/balance/policies/probe_schedule.h"

namespace flextp {

double resize_price(const HybridCosts& h) {
  // Steps resized_steps .. resized_steps + steps - 1 of the episode: their mean growth factor.
  double mean_index = h.resized_steps + (h.steps - 1) / 2;
  return h.lambda * h.skipped_share * h.steps * (1 + mean_index / h.price_doubling);
}

Action hybrid_choice(const HybridCosts& h) {
  const double inf = std::numeric_limits<double>::infinity();
  double keep = h.keep_ms * h.steps;
  double resize = std::isinf(h.lambda) || !h.can_resize ? inf : h.resize_ms * h.steps + resize_price(h);
  double migrate = (h.lambda == 0 || !h.can_migrate) ? inf : h.migrate_ms * h.steps + h.transfer_ms;
  if (migrate < keep && migrate <= resize) return Action::migrate;
  if (resize < keep) return Action::resize;
  return Action::keep;
}

namespace {

class HybridPolicy : public BalancePolicy {
 public:
  explicit HybridPolicy(const BalanceOptions& o)
      : lambda_(o.lambda),
        planner_(o.planner),
        settle_steps_(o.settle_steps),
        probes_(o.probe_first, o.probe_max) {}

  bool uses_importance() const override { return true; }
  bool explores() const override { return true; }

  Decision decide(const Observation& o) override {
    Decision d = choose(o);
    resizing_ = d.action == Action::resize || d.action == Action::probe;
    // The episode's price is what the skipped units have fallen behind: a step kept at full
    // work while the slowdown lasts does not let them catch up, so only its end (or a move
    // that ends the imbalance) starts the price afresh.
    if (resizing_)
      ++resized_steps_;
    else if (d.action == Action::migrate || slow_age_ == 0)
      resized_steps_ = 0;
    return d;
  }

 private:
  Decision choose(const Observation& o) {
    const bool slowdown_is_clear = noise_.observe(o.table);
    if (probes_.due(o.table)) return probe(o);
    // Resizing costs nothing to undo: the hybrid weighs on the last step's speeds.
    const std::vector<double>& speed = o.fast_speeds;
    Decision keep = keep_at(o, speed);
    double keep_ms = keep.plan.now_ms;
    double balanced_ms = predicted_step_ms(balanced_partition(o.partition, speed, o.model), speed, o.model);
    double resize_ms = resized_step_ms(o, speed);
    bool imbalanced = keep_ms > balanced_ms * (1 + planner_.min_gain) || resize_ms < keep_ms * (1 - planner_.min_gain);
    slow_age_ = imbalanced ? slow_age_ + 1 : 0;
    if (!imbalanced) return keep;
    double steps = static_cast<double>(std::min<int64_t>(planner_.horizon, std::max<int64_t>(slow_age_, 1)));
    // A move is costly to undo: it is planned as --balance migrate plans it, on the smoothed
    // speeds, and only if it makes the step min_gain faster. On the last step's speeds, or for
    // any gain, a rank in time slices looks slow one step and fast the next, and the hybrid moved
    // units back and forth (25 and 33 moves in 150 contended steps).
    Plan mig = plan_migration(o.partition, o.speeds, o.model, o.comm, {static_cast<int64_t>(steps), planner_.min_gain});
    HybridCosts h;
    h.keep_ms = keep_ms;
    h.resize_ms = resize_ms;
    h.skipped_share = o.skipped_share(speed);
    // The move's saving as a share of the step, applied to the step as the last one measured it.
    h.migrate_ms = mig.now_ms > 0 ? keep_ms * mig.after_ms / mig.now_ms : keep_ms;
    // A migration's measured cost once there is one; before, two steps' time beyond its bytes.
    h.transfer_ms =
        o.migration_cost_ms >= 0 ? std::max(mig.transfer_ms, o.migration_cost_ms) : mig.transfer_ms + 2 * keep_ms;
    h.can_migrate = mig.migrate && o.since_move >= settle_steps_;
    h.steps = steps;
    h.lambda = lambda_;
    // No rank is slower than its own noise explains (or one was slow from the first step, so its
    // baseline holds the slowness): no resizing, but a lasting imbalance is still migrated away.
    h.can_resize = resizing_ || slowdown_is_clear;
    h.resized_steps = static_cast<double>(resized_steps_);
    h.price_doubling = static_cast<double>(planner_.horizon);
    switch (hybrid_choice(h)) {
      case Action::migrate: return migrate_by(mig);
      case Action::resize: return resize_to(o, speed);  // its plan: keep's, after_ms the resized step
      default: return keep;
    }
  }

  double lambda_;
  PlannerOptions planner_;
  int64_t settle_steps_;
  ProbeSchedule probes_;
  int64_t slow_age_ = 0;  // steps the ranks have been out of balance
  NoiseGate noise_;
  bool resizing_ = false;  // the last decision resized or probed: an episode of resizing goes on
  int64_t resized_steps_ = 0;  // the episode's resized steps so far (its probes included)
};

}  // namespace

std::unique_ptr<BalancePolicy> make_hybrid_policy(const BalanceOptions& o) { return std::make_unique<HybridPolicy>(o); }

}  // namespace flextp

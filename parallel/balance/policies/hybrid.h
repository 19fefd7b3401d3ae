#pragma once
// The hybrid policy's arithmetic, exposed for its tests. Resizing starts only on a slowdown
// clear of the slowed rank's own noise: parallel/balance/noise_gate.h says how that is decided.
#include <vector>

#include "parallel/balance/policy.h"

namespace flextp {

// The hybrid's choice over the expected rest of a slowdown (`steps`: as long again as it lasted,
// at most the horizon): keep, resize (lambda x share of importance skipped per step) or migrate
// (a transfer once). lambda = inf never resizes; lambda = 0 never migrates. can_resize false (no
// resizing under way and no slowdown clear of the noise) leaves resizing out of the comparison.
struct HybridCosts {
  double keep_ms = 0, resize_ms = 0, skipped_share = 0, migrate_ms = 0, transfer_ms = 0;
  bool can_migrate = false, can_resize = true;
  double steps = 1, lambda = 0;
};
Action hybrid_choice(const HybridCosts& h);

// Predicted step time when every rank keeps the units resizing would keep at these speeds.
double resized_step_ms(const Observation& o, const std::vector<double>& speed);

}  // namespace flextp

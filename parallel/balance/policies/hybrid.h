#pragma once
// The hybrid policy's arithmetic, exposed for its tests. Resizing starts only on a slowdown
// clear of the slowed rank's own noise: parallel/balance/noise_gate.h says how that is decided.
#include <vector>

#include "parallel/balance/policy.h"

namespace flextp {

// The hybrid's choice over the expected rest of a slowdown (`steps`: as long again as it lasted,
// at most the horizon): keep, resize (lambda x share of importance skipped per step, a price that
// grows with the resizing episode's length, resize_price below) or migrate (a transfer once).
// lambda = inf never resizes; lambda = 0 never migrates. can_resize false (no resizing under way
// and no slowdown clear of the noise) leaves resizing out of the comparison.
struct HybridCosts {
  double keep_ms = 0, resize_ms = 0, skipped_share = 0, migrate_ms = 0, transfer_ms = 0;
  bool can_migrate = false, can_resize = true;
  double steps = 1, lambda = 0;
  double resized_steps = 0;    // how long the resizing episode has lasted before this step
  double price_doubling = 50;  // episode length at which a resized step's price has doubled
};
Action hybrid_choice(const HybridCosts& h);

// The accuracy price of resizing over the next `steps` steps. Skipping the same least important
// units step after step costs more than skipping them now and then: their weights fall further
// behind the model that trains around them (measured on make train's model: 0.07% above the
// lossless loss after 128 resized steps, 2.2% after 559, about 31x the loss for 4.4x the steps).
// So the k-th step of an episode is priced lambda x share x (1 + k / price_doubling).
double resize_price(const HybridCosts& h);

}  // namespace flextp

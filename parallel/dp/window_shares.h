#pragma once
// Balancing across data-parallel replicas: the windows of a step are split over the replicas in
// proportion to their measured speed, in whole windows (whole micro-steps with --micro-batch), so
// that a slow replica computes fewer windows instead of holding the others at the gradient sum.
// The step's windows and the loss stay those of the even split: replica d computes the windows
// after those of replicas < d (Grid::windows), and each micro-step's loss is scaled by its
// windows / the step's (parallel/dp/micro_batches.h), so the gradient is the same mean.
//
// A replica's speed is its windows / its slowest rank's compute time of the step's forward and
// backward passes (waiting in collectives excluded, so not the wait for the other replicas; the
// optimizer's step, the same whatever the windows, left out so that it does not read as a slow
// window), smoothed over steps by the balancer's monitor (parallel/balance/monitor.h) run over
// the replicas. Every rank gathers the same vector of speeds and the shares are a deterministic
// function of it, so every rank of every replica computes the same shares. The shares decided
// after a step apply from the next one; the policy decides them from the speeds measured up to
// the step before (the trainer measures after the balancer's step).
#include <cstdint>
#include <vector>

#include "parallel/balance/monitor.h"
#include "parallel/comm/communicator.h"
#include "parallel/dp/grid.h"

namespace flextp {

// What the balancing policy sees of the replicas (parallel/balance/policy.h's Observation).
// Empty windows: one replica, nothing to share.
struct ReplicaView {
  std::vector<int64_t> windows;  // each replica's windows of a step now (they sum to the batch)
  std::vector<double> speed;     // each replica's smoothed windows per ms; 0 while not measured
  int64_t micro = 0;             // shares are whole multiples of this many windows (0: of one)
  bool movable = false;          // false (--dp-shares even): the shares stay the even split
  double least_wait_ms = 0;      // the least wait of any rank of any replica in the step (link_watch.h)

  int replicas() const { return static_cast<int>(windows.size()); }
};

// A share of `batch` windows for each of `replicas` replicas, all equal; an error names the
// problem when the batch does not split so (or a share not into micro-steps of `micro`).
std::vector<int64_t> even_shares(int64_t batch, int replicas, int64_t micro);

// The step time these shares take at these speeds (windows per ms): the slowest replica's.
double predicted_step_ms(const std::vector<int64_t>& shares, const std::vector<double>& speed);

// The shares of `batch` windows, multiples of `micro` (0: 1) and at least one micro-step each,
// that make the slowest replica finish first: in proportion to speed, rounded to whole
// micro-steps (each further micro-step goes to the replica that would finish it soonest; ties to
// the lower replica). An error names bad input (speeds not positive, a batch that is not whole
// micro-steps, fewer micro-steps than replicas).
std::vector<int64_t> proportional_shares(const std::vector<double>& speed, int64_t batch, int64_t micro);

// The hysteresis: change the shares only when the predicted step time gains more than this share.
constexpr double kShareMinGain = 0.1;

// The shares of the next steps: the proportional ones when they cut the predicted step time of
// the current shares by more than `min_gain`, the current ones otherwise (also while a speed is
// not measured, and always when the shares are not movable). What the built-in policies decide.
std::vector<int64_t> speed_shares(const ReplicaView& now, double min_gain = kShareMinGain);

// An error names the problem when `shares` are not whole micro-steps of `micro`, at least one per
// replica, summing to `batch` over `replicas` replicas (`who`: where they came from, for the message).
void check_shares(const std::vector<int64_t>& shares, int replicas, int64_t batch, int64_t micro, const char* who);

// A run's window shares: the ones in force, and the replicas' speeds measured after each step.
class WindowShares {
 public:
  // `window`: the speed EMA's span in steps (the monitor's). Starts at the even split.
  WindowShares(const Grid& grid, int64_t batch, int64_t micro, bool movable, int window);
  // This replica's windows of a step now: [first, first + count).
  std::pair<int64_t, int64_t> windows() const { return grid_.windows(shares_); }
  const std::vector<int64_t>& shares() const { return shares_; }
  // After a step: every rank of every replica calls it with the compute time of its forward and
  // backward passes in the step and the windows it computed. `group`: its tensor-parallel group,
  // `replicas`: its data-parallel group (collectives on both, untimed). Returns the windows each
  // replica computed in the step just done (an error names the problem when they do not add up
  // to the batch) and their speeds, and the least of the replicas' `least_wait_ms` (each its
  // group's least wait: a slower replica makes the others wait, not itself). Then adopts
  // `decided` (the policy's shares; empty: unchanged) for the next steps.
  ReplicaView after_step(Communicator& group, Communicator& replicas, double compute_ms, int64_t computed,
                         const std::vector<int64_t>& decided, double least_wait_ms = 0);
  // What the policy decides the next shares from: the shares now and the measured speeds.
  ReplicaView view() const;

 private:
  Grid grid_;
  int64_t batch_, micro_;
  bool movable_;
  std::vector<int64_t> shares_;
  Monitor speeds_;  // over the replicas: work = windows, so speed = windows per ms
};

}  // namespace flextp

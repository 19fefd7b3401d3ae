#pragma once
// The closed loop around every balancing decision. A model of the machine is always wrong
// somewhere (time slicing, a shared GPU, throttling, a slow link), so each move or resize is a
// trial: the balancer measures the steps after it against the steps before it, keeps what paid
// and undoes what did not. A failed trial backs off (no new change for a while, twice as long
// after each failure in a row) and its configuration is remembered as worse, so nothing
// oscillates; a change of the ranks' speeds starts afresh. The prediction's error is learned
// as a per-rank correction of the speeds the policies see (learn_correction).
//
// Trials are fed the measured step of every step (the slowest rank's compute and waits, from
// the monitor's table: every rank passes the same number, so all judge alike) and never read a
// clock: tests drive them with any step times they like.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/timer.h"
#include "parallel/balance/planner.h"

namespace flextp {

struct TrialOptions {
  bool enabled = true;
  int64_t settle = 1;       // steps after a change left out of its measurement (fresh buffers, caches)
  int64_t measure = 4;      // steps whose median is the change's measured step
  int64_t baseline = 4;     // at most this many full steps before a move: their median is "before"
  // and at least this many: a move in a run's first steps once had one step to compare with, a
  // 685 ms start-up step against 100 ms ones, and the correction learned from it moved twice too
  // many units
  int64_t solid_before = 3;
  double keep_gain = 0.02;  // a change is kept when it makes the measured step at least this much faster
  // and a resize only when that gain is its predicted one, within the larger of the steps' noise
  // (set_noise) and this share of the prediction: on a busy machine the step before a resize is
  // often a passing spike, and the steps after it measured 20-47% faster where nothing was
  // predicted; a gain the resize did not predict is the spike's passing, not the resize's doing.
  double resize_tolerance = 0.5;
  int64_t backoff_first = 16, backoff_max = 512;  // steps without a change after a failed trial
  // Conditions: each rank's share of the ranks' total smoothed speed. A share moved by more than
  // `new_conditions` (relative) since a measurement means it no longer holds.
  double new_conditions = 0.3;
  // Tries of the model's best move when no policy asked for one: only after `steady_steps` steps
  // in which no share moved by more than `steady` (a machine's noise is no reason to guess),
  // while the measured step is `try_gap` above the model's ideal, for a move predicted to save
  // at least `try_gain`.
  double try_gap = 0.25, try_gain = 0.05, steady = 0.1;
  int64_t steady_steps = 8;
};

enum class Change { move, resize };
enum class TrialEvent { none, kept, undone };

class Trials {
 public:
  explicit Trials(TrialOptions o = {});

  // The step just measured; the ranks' smoothed speeds; every_unit: no rank skipped a unit in
  // it. Returns the verdict when this step completes a trial's measurement; the caller undoes
  // the change on `undone`. A first step is never measured (start-up costs).
  TrialEvent observe(double step_ms, const std::vector<double>& speeds, bool every_unit = true);
  // Whether a change may start now: no trial under way and not backing off. Every change the
  // balancer makes when this is true must be announced with start().
  bool may_start() const;
  // Whether a move may start: as may_start, and `solid_before` recent steps at the level of the
  // last one to compare it with (a resize, judged against the last step, needs only one).
  bool may_move() const;
  // Whether the conditions have held still long enough for a try of the model's best move.
  bool steady() const { return steady_for_ >= o_.steady_steps; }
  // A change made after this step, from configuration `from` to `to` (keys that name them, e.g.
  // partitions' text), predicted to save this share of the step. A move is compared with the
  // median of the recent steps that ran every unit of the partition (the full work it
  // replaces, never a resized step) at the level of the last one (within 25%: a slowdown that
  // began in the last steps leaves the faster steps before it out); a resize, which reacts to
  // the last step alone, with it.
  void start(Change c, double predicted_gain, const std::string& from, const std::string& to);
  // The change under trial ended by itself before its verdict (a resizing policy restored every
  // unit: the slowdown passed within the steps a measurement needs, too soon for resizing to
  // pay). Its verdict is inconclusive and it backs off as a failure does, so that a busy
  // machine's spikes do not start one resize after another. False when none was under way.
  bool cancel();
  bool under_way() const { return phase_ != Phase::idle; }
  Change change() const { return change_; }
  // Whether `key` was measured slower than the configuration it was compared with, under the
  // conditions of now.
  bool known_worse(const std::string& key) const;
  // The median of the recent full steps of the current configuration (0: none yet).
  double recent_ms() const { return median(recent_); }
  int64_t recent_steps() const { return static_cast<int64_t>(recent_.size()); }
  int64_t backoff_left() const { return backoff_left_; }
  int64_t failures() const { return failures_; }

  // The relative noise of the ranks' speeds (the noise gate's, NoiseGate::noise): a resize's
  // measured gain must match its prediction within it.
  void set_noise(double noise) { noise_ = noise; }
  // The last verdict: the steps before and after (medians, ms), the predicted gain and why. A
  // verdict under conditions that changed during the trial is inconclusive: an undo then
  // counts no failure and sets no backoff.
  const std::string& why() const { return why_; }
  double before_ms() const { return before_ms_; }
  double after_ms() const { return after_ms_; }
  double predicted_gain() const { return predicted_gain_; }

  double measured_gain() const { return before_ms_ > 0 ? 1 - after_ms_ / before_ms_ : 0.0; }
  bool inconclusive() const { return inconclusive_; }
  const TrialOptions& options() const { return o_; }

 private:
  enum class Phase { idle, settling, measuring, restoring };
  TrialOptions o_;
  Phase phase_ = Phase::idle;
  Change change_ = Change::move;
  int64_t seen_ = 0;          // steps observed (the first one is left out)
  int64_t phase_steps_ = 0;   // steps in this phase so far
  std::vector<double> recent_;  // full steps of the current configuration, newest last
  std::vector<double> before_;  // recent_ when the trial under way started
  std::vector<double> after_;   // steps measured for the trial under way
  std::vector<double> shares_;  // the conditions now
  std::vector<double> recent_shares_;  // when recent_ began
  std::vector<double> start_shares_, fail_shares_;  // at the trial's start; at the last failure
  std::vector<double> steady_ref_, steady_shares_;  // the steady reference; the last steady shares
  int64_t steady_for_ = 0;
  // Configurations measured slower than what they were compared with, and the conditions
  // (shares) they were measured in.
  std::map<std::string, std::vector<double>> worse_;
  std::string from_, to_, why_;
  double noise_ = 0;
  double before_ms_ = 0, after_ms_ = 0, predicted_gain_ = 0;
  bool inconclusive_ = false;
  int64_t backoff_left_ = 0, failures_ = 0;
  bool failed_resize_ = false;  // the last failure was a resize's

  bool moved(const std::vector<double>& from, double by) const;  // shares_ against `from`
  std::vector<double> at_level() const;  // the recent steps within kSameLevel of the last, newest first
  TrialEvent verdict();
  bool pays();  // whether the measured gain keeps the change; says why in why_
  void fail();  // counts a failure: the backoff doubles
};

// The prediction's error, learned: the factor on the speed corrections of the ranks that gave
// units away (in `from` -> `to`) that makes the model's predicted saving equal the measured one
// (ms: the step before less the step after), taken halfway (in log terms) so that one noisy
// trial does not swing it; with several fits, the one nearest to no change. A negative saving is
// taken as none (the move saved nothing; by how much it lost is mostly noise). correction[r]
// divides rank r's measured speed and stays within [1/4, 4]. Pure: every rank computes the same
// from the same table.
std::vector<double> learn_correction(const Partition& from, const Partition& to, const std::vector<double>& speed,
                                     const ModelCosts& c, std::vector<double> correction, double measured_saving_ms);
// speed[r] / correction[r].
std::vector<double> corrected_speeds(const std::vector<double>& speed, const std::vector<double>& correction);

}  // namespace flextp

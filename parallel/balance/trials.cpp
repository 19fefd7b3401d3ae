#include "parallel/balance/trials.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace flextp {

namespace {
constexpr double kSameLevel = 0.25;  // steps within 25% of the last are at its level

std::string percent(double share) {
  char text[16];
  std::snprintf(text, sizeof text, "%+.1f%%", 100 * share);
  return text;
}
}  // namespace

Trials::Trials(TrialOptions o) : o_(o) {
  FLEXTP_CHECK(o_.measure >= 1 && o_.baseline >= 1 && o_.settle >= 0 && o_.solid_before >= 1 && o_.solid_before <= o_.baseline,
               "trials: measure and baseline need >= 1 step, and 1 <= solid_before <= baseline");
  FLEXTP_CHECK(o_.backoff_first >= 1 && o_.backoff_max >= o_.backoff_first, "trials: bad backoff");
}

bool Trials::moved(const std::vector<double>& from, double by) const {
  if (from.size() != shares_.size()) return !from.empty() || !shares_.empty();
  for (size_t r = 0; r < from.size(); ++r)
    if (std::abs(shares_[r] - from[r]) > by * from[r]) return true;
  return false;
}

TrialEvent Trials::observe(double step_ms, const std::vector<double>& speeds, bool every_unit) {
  if (++seen_ == 1) return TrialEvent::none;  // the first step pays start-up costs
  double total = 0;
  for (double s : speeds) total += s;
  if (total > 0) {
    shares_.clear();
    for (double s : speeds) shares_.push_back(s / total);
  }
  const bool was_steady = steady();
  if (moved(steady_ref_, o_.steady)) {
    steady_ref_ = shares_;
    steady_for_ = 0;
  } else {
    ++steady_for_;
  }
  // A lasting change of speeds: the steps before it and a failure say nothing of the new
  // conditions. Lasting: away from the steady speeds of the failure, and steady since, or, after
  // a move's failure, from a steady machine (a quiet one's change, answered at once). A failed
  // resize is how a busy machine's spikes look, and spikes move the shares by 30% now and then
  // (a 10x one; two in a row on a rank): that reset its backoff 5 times in 4,000 spiky steps.
  if (failures_ > 0 && moved(fail_shares_, o_.new_conditions) && (steady() || (was_steady && !failed_resize_)))
    failures_ = backoff_left_ = 0;
  if (steady()) steady_shares_ = shares_;
  if (moved(recent_shares_, o_.new_conditions)) {
    recent_.clear();
    recent_shares_ = shares_;
  }
  switch (phase_) {
    case Phase::restoring:
      if (++phase_steps_ <= o_.settle) break;
      phase_ = Phase::idle;
      [[fallthrough]];
    case Phase::idle:
      if (every_unit) recent_.push_back(step_ms);
      if (static_cast<int64_t>(recent_.size()) > o_.baseline) recent_.erase(recent_.begin());
      break;
    case Phase::settling:
      if (++phase_steps_ >= o_.settle) phase_ = Phase::measuring;
      return TrialEvent::none;
    case Phase::measuring:
      after_.push_back(step_ms);
      if (static_cast<int64_t>(after_.size()) < o_.measure) return TrialEvent::none;
      return verdict();
  }
  if (backoff_left_ > 0) --backoff_left_;
  return TrialEvent::none;
}

bool Trials::pays() {
  const double gain = measured_gain();
  if (gain < o_.keep_gain) {
    why_ = "the steps were not " + percent(o_.keep_gain) + " faster";
    return false;
  }
  if (change_ == Change::move) return why_ = "the steps were faster", true;
  const double band = std::max({o_.keep_gain, noise_, o_.resize_tolerance * std::abs(predicted_gain_)});
  const bool consistent = predicted_gain_ > noise_ && std::abs(gain - predicted_gain_) <= band;
  why_ = (consistent ? "as predicted, within " : "not the predicted gain, beyond ") + percent(band).substr(1) +
         " (the speeds' noise " + percent(noise_).substr(1) + ")";
  return consistent;
}

void Trials::fail() {
  ++failures_;
  backoff_left_ = std::min(o_.backoff_max, o_.backoff_first << std::min<int64_t>(failures_ - 1, 30));
  fail_shares_ = steady_shares_.empty() ? shares_ : steady_shares_;
  failed_resize_ = change_ == Change::resize;
}

TrialEvent Trials::verdict() {
  after_ms_ = median(after_);
  inconclusive_ = moved(start_shares_, o_.new_conditions);
  const bool kept = pays();
  if (inconclusive_) why_ += "; the speeds changed meanwhile: inconclusive";
  if (kept) {
    phase_ = Phase::idle;
    // A move's steps are the new partition's full work; a resize keeps the full steps it had.
    if (change_ == Change::move) recent_ = after_;
    if (static_cast<int64_t>(recent_.size()) > o_.baseline) recent_.erase(recent_.begin(), recent_.end() - o_.baseline);
    failures_ = 0;
    if (!inconclusive_) worse_[from_] = shares_;
    return TrialEvent::kept;
  }
  phase_ = Phase::restoring;
  phase_steps_ = 0;
  recent_ = before_;
  // A resize answers the last step, and its trial is as short as the spikes that fool it: one
  // undone backs off whatever the speeds did meanwhile.
  if (!inconclusive_ || change_ == Change::resize) fail();
  if (!inconclusive_) worse_[to_] = shares_;
  return TrialEvent::undone;
}

bool Trials::may_start() const { return phase_ == Phase::idle && backoff_left_ == 0 && !recent_.empty(); }

std::vector<double> Trials::at_level() const {
  std::vector<double> level;
  for (auto it = recent_.rbegin(); it != recent_.rend() && std::abs(*it / recent_.back() - 1) <= kSameLevel; ++it)
    level.push_back(*it);
  return level;
}

bool Trials::may_move() const {
  return may_start() && static_cast<int64_t>(at_level().size()) >= o_.solid_before;
}

void Trials::start(Change c, double predicted_gain, const std::string& from, const std::string& to) {
  FLEXTP_CHECK(may_start(), "trials: a change started while another is under trial or backing off");
  change_ = c;
  predicted_gain_ = predicted_gain;
  from_ = from;
  to_ = to;
  before_ = recent_;
  // The steps at the level of the last one: a policy that acts on the first steps of a slowdown
  // must be judged against them, not against the faster steps before it began.
  before_ms_ = c == Change::resize ? recent_.back() : median(at_level());
  start_shares_ = shares_;
  worse_.erase(to);
  after_.clear();
  phase_steps_ = 0;
  phase_ = o_.settle > 0 ? Phase::settling : Phase::measuring;
}

bool Trials::cancel() {
  if (phase_ != Phase::settling && phase_ != Phase::measuring) return false;
  const int64_t ran = phase_ == Phase::settling ? phase_steps_ : o_.settle + static_cast<int64_t>(after_.size());
  why_ = "resizing ended after " + std::to_string(ran) +
         " step(s), before it was measured: the slowdown passed too soon for resizing to pay";
  phase_ = Phase::idle;
  recent_ = before_;
  inconclusive_ = true;
  fail();
  return true;
}

bool Trials::known_worse(const std::string& key) const {
  auto it = worse_.find(key);
  return it != worse_.end() && !moved(it->second, o_.new_conditions);
}

std::vector<double> corrected_speeds(const std::vector<double>& speed, const std::vector<double>& correction) {
  std::vector<double> out = speed;
  for (size_t r = 0; r < out.size() && r < correction.size(); ++r) out[r] /= correction[r];
  return out;
}

std::vector<double> learn_correction(const Partition& from, const Partition& to, const std::vector<double>& speed,
                                     const ModelCosts& c, std::vector<double> correction, double measured_saving_ms) {
  const int n = from.ranks();
  FLEXTP_CHECK(static_cast<int>(speed.size()) == n && static_cast<int>(correction.size()) == n,
               "learn_correction: ", speed.size(), " speeds and ", correction.size(), " corrections for ", n, " ranks");
  if (!std::isfinite(measured_saving_ms)) return correction;
  // A move measured slower than it started says it saved nothing; how much slower is mostly
  // noise, and fitting it would teach the reverse imbalance (under a duty cycle one undone try,
  // 54 -> 64 ms, halved the slow rank's correction and sent units the wrong way, 46 -> 81 ms).
  measured_saving_ms = std::max(measured_saving_ms, 0.0);
  std::vector<double> before = rank_work(from, c), after = rank_work(to, c);
  std::vector<int> sources;
  for (int r = 0; r < n; ++r)
    if (after[r] < before[r]) sources.push_back(r);
  if (sources.empty()) return correction;
  constexpr double kLimit = 4;
  // The model's saving with the sources' correction scaled by e^x: it grows with x (slower
  // sources make the move save more). A saving in ms, not a ratio: what the model leaves out
  // (the collectives' own time) is in both steps and cancels.
  auto saving = [&](double x) {
    std::vector<double> k = correction;
    for (int r : sources) k[r] = std::clamp(k[r] * std::exp(x), 1 / kLimit, kLimit);
    std::vector<double> s = corrected_speeds(speed, k);
    return predicted_step_ms(from, s, c) - predicted_step_ms(to, s, c);
  };
  const double tolerance = 1e-3 * std::max(std::abs(measured_saving_ms), 1e-3);
  const double now = saving(0);
  if (std::abs(now - measured_saving_ms) <= tolerance) return correction;
  // Bisect from no change (x = 0) toward the side that fits: the fit nearest to no change.
  double lo = 0, hi = 0;
  (now < measured_saving_ms ? hi : lo) = (now < measured_saving_ms ? 1 : -1) * std::log(kLimit);
  const bool up = now < measured_saving_ms;
  for (int i = 0; i < 50 && hi - lo > 1e-9; ++i) {
    double mid = 0.5 * (lo + hi), at = saving(mid);
    ((up ? at < measured_saving_ms : at <= measured_saving_ms) ? lo : hi) = mid;
  }
  const double x = up ? hi : lo;
  for (int r : sources) correction[r] = std::clamp(correction[r] * std::exp(0.5 * x), 1 / kLimit, kLimit);
  return correction;
}

}  // namespace flextp

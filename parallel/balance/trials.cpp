#include "parallel/balance/trials.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace flextp {

double median_ms(std::vector<double> ms) {
  if (ms.empty()) return 0.0;
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  return n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
}

Trials::Trials(TrialOptions o) : o_(o) {
  FLEXTP_CHECK(o_.measure >= 1 && o_.baseline >= 1 && o_.settle >= 0, "trials: measure and baseline need >= 1 step");
  FLEXTP_CHECK(o_.backoff_first >= 1 && o_.backoff_max >= o_.backoff_first, "trials: bad backoff");
}

bool Trials::conditions_changed(const std::vector<double>& speeds) {
  double total = 0;
  for (double s : speeds) total += s;
  if (!(total > 0)) return false;
  std::vector<double> share;
  for (double s : speeds) share.push_back(s / total);
  bool changed = regime_.size() != share.size();
  for (size_t r = 0; !changed && r < share.size(); ++r)
    changed = std::abs(share[r] - regime_[r]) > o_.regime_change * regime_[r];
  if (!changed) return false;
  const bool first = regime_.empty();
  regime_ = share;
  if (first) return false;
  // New conditions: what was measured before says nothing about them.
  recent_.clear();
  measured_.clear();
  backoff_left_ = 0;
  failures_ = 0;
  return true;
}

TrialEvent Trials::observe(double step_ms, const std::vector<double>& speeds, bool every_unit) {
  if (++seen_ == 1) return TrialEvent::none;  // the first step pays start-up costs
  const bool changed = conditions_changed(speeds);
  if (changed && (phase_ == Phase::settling || phase_ == Phase::measuring)) {
    // The steps before and after the change ran under other conditions: no verdict, the change
    // stays, and the policy decides again on what it sees now.
    phase_ = Phase::idle;
  }
  switch (phase_) {
    case Phase::idle:
      if (every_unit) recent_.push_back(step_ms);
      if (static_cast<int64_t>(recent_.size()) > o_.baseline) recent_.erase(recent_.begin());
      if (backoff_left_ > 0) --backoff_left_;
      return TrialEvent::none;
    case Phase::restoring:
      if (++phase_steps_ > o_.settle) {
        phase_ = Phase::idle;
        if (every_unit) recent_.push_back(step_ms);
      }
      if (backoff_left_ > 0) --backoff_left_;
      return TrialEvent::none;
    case Phase::settling:
      if (++phase_steps_ >= o_.settle) phase_ = Phase::measuring;
      return TrialEvent::none;
    case Phase::measuring:
      after_.push_back(step_ms);
      if (static_cast<int64_t>(after_.size()) < o_.measure) return TrialEvent::none;
      break;
  }
  after_ms_ = median_ms(after_);
  measured_[from_] = before_ms_;
  measured_[to_] = after_ms_;
  if (after_ms_ <= before_ms_ * (1 - o_.keep_gain)) {
    phase_ = Phase::idle;
    // A move's steps are the new partition's full work; a resize keeps the full steps it had.
    if (change_ == Change::move) recent_ = after_;
    if (static_cast<int64_t>(recent_.size()) > o_.baseline) recent_.erase(recent_.begin(), recent_.end() - o_.baseline);
    failures_ = 0;
    return TrialEvent::kept;
  }
  ++failures_;
  backoff_left_ = std::min(o_.backoff_max, o_.backoff_first << std::min<int64_t>(failures_ - 1, 30));
  phase_ = Phase::restoring;
  phase_steps_ = 0;
  recent_ = before_;
  return TrialEvent::undone;
}

bool Trials::may_start() const { return phase_ == Phase::idle && backoff_left_ == 0 && !recent_.empty(); }

void Trials::start(Change c, double predicted_gain, const std::string& from, const std::string& to) {
  FLEXTP_CHECK(may_start(), "trials: a change started while another is under trial or backing off");
  change_ = c;
  predicted_gain_ = predicted_gain;
  from_ = from;
  to_ = to;
  before_ = recent_;
  before_ms_ = median_ms(recent_);
  after_.clear();
  phase_steps_ = 0;
  phase_ = o_.settle > 0 ? Phase::settling : Phase::measuring;
}

void Trials::cancel() {
  if (phase_ != Phase::settling && phase_ != Phase::measuring) return;
  phase_ = Phase::idle;
  recent_ = before_;
}

bool Trials::known_worse(const std::string& key) const {
  auto it = measured_.find(key);
  double now = recent_ms();
  return it != measured_.end() && now > 0 && it->second * (1 - o_.keep_gain) >= now;
}

double Trials::recent_ms() const { return median_ms(recent_); }

std::vector<double> corrected_speeds(const std::vector<double>& speed, const std::vector<double>& correction) {
  std::vector<double> out = speed;
  for (size_t r = 0; r < out.size() && r < correction.size(); ++r) out[r] /= correction[r];
  return out;
}

std::vector<double> learn_correction(const Partition& from, const Partition& to, const std::vector<double>& speed,
                                     const UnitCosts& c, std::vector<double> correction, double measured_saving_ms) {
  const int n = from.ranks();
  FLEXTP_CHECK(static_cast<int>(speed.size()) == n && static_cast<int>(correction.size()) == n,
               "learn_correction: ", speed.size(), " speeds and ", correction.size(), " corrections for ", n, " ranks");
  if (!std::isfinite(measured_saving_ms)) return correction;
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

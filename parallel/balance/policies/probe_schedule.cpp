#include "parallel/balance/policies/probe_schedule.h"

#include <algorithm>

namespace flextp {

bool ProbeSchedule::due(const std::vector<RankRow>& table) {
  bool any_skipped = false;  // some rank skipped units in that step
  for (const RankRow& r : table) any_skipped = any_skipped || r.units.skipped > 0;
  bool was_probe = probing_;
  probing_ = false;
  if (!any_skipped && !was_probe) resized_for_ = 0, episode_probes_ = 0;  // the episode is over
  if (any_skipped) ++resized_for_;
  int64_t gap = std::min(max_, first_ << std::min<int64_t>(episode_probes_, 20));
  if (first_ <= 0 || !any_skipped || resized_for_ < gap) return false;
  resized_for_ = 0;
  ++episode_probes_;
  probing_ = true;
  return true;
}

}  // namespace flextp

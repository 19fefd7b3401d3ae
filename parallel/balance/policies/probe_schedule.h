#pragma once
// When a resizing policy runs every unit for one step (a probe), so that a rank's speed is
// measured on all its work again (see BalanceOptions::probe_first): after `first` resized
// steps, then after twice as many each time, up to `max`; the schedule starts over when an
// episode of resizing ends. Decided from the monitor's table, which every rank sees alike, so
// all ranks probe in the same step.
#include <cstdint>
#include <vector>

#include "parallel/balance/monitor.h"

namespace flextp {

class ProbeSchedule {
 public:
  ProbeSchedule(int64_t first, int64_t max) : first_(first), max_(max) {}
  // Called once per step with the table of the step just measured: whether the next runs as a probe.
  bool due(const std::vector<RankRow>& table);

 private:
  int64_t first_, max_;
  int64_t resized_for_ = 0;     // resized steps since the last probe (or the episode's start)
  int64_t episode_probes_ = 0;  // probes since resizing began
  bool probing_ = false;        // the step being measured ran every unit as a probe
};

}  // namespace flextp

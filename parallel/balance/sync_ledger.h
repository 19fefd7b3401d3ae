#pragma once
// What a rank's time slices cost the others at the step's sync points, beyond its bursts.
// A rank that shares its core (or GPU) with a noisy neighbour is descheduled now and then; when
// that happens while it waits inside a collective, the ranks arriving after it wait until it is
// scheduled again, and that time shows as their wait, not as its compute (which BurstMeter
// sees). Two things are measured:
//  - On the rank itself, per collective: when it arrived (ms after its step began), the wall
//    time inside and how much of it the thread was off the CPU (wall minus its CPU time,
//    CLOCK_THREAD_CPUTIME_ID: two clock reads per collective). From them, its hold: the ms per
//    step the others would wait for it if it were first at every sync point, N x E[off at a
//    random moment inside a collective] x E[rest of that off stretch] = N x sum d^2 / (2 sum w)
//    (d, w: each collective's descheduled and wall ms; q = sum d / sum w is the chance of being
//    off, sum d^2 / (2 sum d) the mean rest of a stretch met at random). It does not depend on
//    the rank's share of the work: a slice costs the same whatever it holds, and the number of
//    sync points does not change. A rank that sleeps (the emulated straggler) or spins on a
//    free core is never off inside a collective: its hold is 0.
//  - Across ranks (the monitor all-gathers the arrivals): each rank's lateness, the sum over
//    sync points where it arrived last of how long after the next-latest it came: the time the
//    others waited for its arrival (lateness_ms).
#include <cstdint>
#include <vector>

namespace flextp {

class SyncLedger {
 public:
  void clear();
  // One collective: reached `arrival_ms` after the step began, `wall_ms` inside it, of which the
  // thread ran `cpu_ms` (what exceeds the wall, clock granularity, counts as none off).
  void add(double arrival_ms, double wall_ms, double cpu_ms);
  const std::vector<double>& arrival_ms() const { return arrival_; }
  int64_t collectives() const { return static_cast<int64_t>(arrival_.size()); }
  double inside_ms() const { return inside_; }
  double descheduled_ms() const { return off_; }
  // The waits this rank's off stretches cost the others per step if it is first at every sync
  // point: N x sum d^2 / (2 sum w). 0 when it is never off inside a collective.
  double hold_ms() const;

 private:
  std::vector<double> arrival_;
  double inside_ = 0, off_ = 0, off_squared_ = 0;
};

// Per rank, the time the others waited for its arrival: arrival_ms[r][k] is rank r's arrival at
// sync point k (ms after its step began); at each k the last rank is charged its lead over the
// next-latest, the others nothing (a tie charges no one). Sync points beyond the shortest row
// are not compared (the ranks disagree on them).
std::vector<double> lateness_ms(const std::vector<std::vector<double>>& arrival_ms);

}  // namespace flextp

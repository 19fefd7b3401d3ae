#pragma once
// Straggler emulation, so that every heterogeneity claim is reproducible on any machine:
//   --straggler RANK:FACTOR[:FROM[:TO]]  slows RANK by FACTOR over steps [FROM, TO)
//   --straggler-trace FILE               per-step factors per rank from a CSV file:
//                                        "step,f0,f1,...": factors from that step on
// A slowed rank, after each compute segment (the work between two collectives), waits
// (FACTOR - 1) x that segment's measured compute time: it looks like a proportionally slower
// device, and the wait is counted as its compute time, never as communication (the waiting is
// done by StepClock, parallel/balance/step_clock.h).
// Real contention (--contend): busy threads beside a rank, so that it is slow the way a shared
// core is.
#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>


namespace flextp {

struct StragglerSpec {
  int rank = 0;
  double factor = 1.0;
  int64_t from = 0, to = std::numeric_limits<int64_t>::max();
};

StragglerSpec parse_straggler(const std::string& spec);

class SlowdownSchedule {
 public:
  SlowdownSchedule() = default;
  SlowdownSchedule(std::vector<StragglerSpec> specs, int ranks);
  // Adds a trace: lines "step,f0,...,f{ranks-1}" sorted by step; a header line is allowed.
  void load_trace(const std::string& path);
  double factor(int rank, int64_t step) const;
  bool empty() const { return specs_.empty() && trace_.empty(); }
  // The schedule of ranks [first, first + count), numbered from 0: what a tensor-parallel group
  // of consecutive ranks takes of a schedule that names the ranks of the world.
  SlowdownSchedule ranks(int first, int count) const;

 private:
  std::vector<StragglerSpec> specs_;
  std::vector<std::pair<int64_t, std::vector<double>>> trace_;
  int ranks_ = 1;
};

// Real contention (--contend RANK:THREADS[:BUSY/PERIOD]): THREADS busy threads beside RANK. With
// a duty cycle they spin for the first BUSY ms of every PERIOD ms and sleep for the rest, the
// way a noisy neighbour takes a shared core in time slices: the rank runs in bursts, slowed
// between 1x and 2x on average (a thread per core: ~1 + BUSY/PERIOD), with bursts of known length.
// On a GPU each thread keeps the rank's GPU busy instead, on the same schedule: a kernel that
// fills every SM, on a stream of its own, for the busy part of each period (core/cuda/spin.cu).
struct ContendSpec {
  int rank = 0;
  int threads = 1;
  double busy_ms = 0, period_ms = 0;  // period 0: busy all the time
  bool continuous() const { return period_ms <= 0; }
  // Whether the threads spin at `t_ms` after they started.
  bool busy_at(double t_ms) const;
  // Milliseconds from `t_ms` to the next switch between spinning and sleeping.
  double until_switch(double t_ms) const;
  // What a thread does next at `t_ms`: spin (on the core or the GPU) or sleep, for `ms`, at most
  // `slice_ms` so that it sees a stop request soon.
  struct Phase {
    bool busy;
    double ms;
  };
  Phase phase_at(double t_ms, double slice_ms) const;
};

ContendSpec parse_contend(const std::string& spec);

class Contention {
 public:
  // Beside this process's cores, or on GPU `gpu` (the rank's device): an error names the problem
  // when there is no such GPU (a build without CUDA has none).
  explicit Contention(const ContendSpec& spec, std::optional<int> gpu = std::nullopt);
  ~Contention();
  Contention(const Contention&) = delete;
  Contention& operator=(const Contention&) = delete;

 private:
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
};

}  // namespace flextp

#pragma once
// The data x tensor parallel step on paper, for bench_simulate --grid: a grid of `dp` replicas,
// each a tensor-parallel group of `tp` ranks of given speeds, trains one step of `batch` windows.
//  - A replica computes a window as its group's slowest rank allows after that level's balancing
//    (the planner's predicted_step_ms over the even or the balanced partition), plus its
//    tensor-parallel all-reduces (2 per layer, ring over the group); its time is that per-window
//    time times its share of the windows.
//  - The step is the slowest replica plus the data-parallel gradient all-reduce (ring over the
//    replicas, the gradient bytes of one tensor-parallel slot), not overlapped with the backward.
// The four ways to run it: the even split everywhere (what Megatron does), migration inside each
// group only, window shares across replicas only, both; and the ideal bound (the whole work at
// the sum of every rank's speed, the communication of the even split). A model, not a
// measurement: it knows no noise, no bursts and no overlap.
#include <cstdint>
#include <vector>

#include "nn/config.h"
#include "parallel/balance/planner.h"
#include "parallel/tp/partition.h"

namespace flextp {

// One kind of link: a ring all-reduce over n ranks takes 2 (n - 1) steps, each a latency plus
// bytes / n at the bandwidth.
struct Link {
  double gbs = 25;         // bandwidth, GB/s
  double latency_us = 10;  // per message
  double ring_allreduce_ms(double bytes, int ranks) const;
};

// Rank speeds of a grid: speed[replica][tensor-parallel rank], 1 the nominal speed.
using GridSpeeds = std::vector<std::vector<double>>;

class GridModel {
 public:
  // A model of config `c` on windows of `seq` tokens, trained on grids of groups of `tp` ranks
  // with `batch` windows per step; one window takes `window_ms` on one rank at speed 1 (so the
  // even split of a group at equal speeds takes window_ms / tp of compute per window).
  GridModel(const GPTConfig& c, int64_t seq, int tp, int64_t batch, double window_ms, Link tp_link, Link dp_link);

  // Per window of one replica of these speeds: compute under the even or the balanced partition,
  // plus the tensor-parallel all-reduces.
  double replica_window_ms(const std::vector<double>& speed, bool balance) const;
  // The data-parallel gradient all-reduce over `replicas`.
  double dp_allreduce_ms(int replicas) const;
  // The step: the slowest replica's share plus the gradient all-reduce.
  double step_ms(const GridSpeeds& speed, bool migrate, bool shares) const;
  double ideal_ms(const GridSpeeds& speed) const;

  // The gradient bytes of one tensor-parallel slot: its share of the units' weights (the
  // replicated position table, LayerNorms and biases, under 1% of GPT-2, are left out).
  double slot_gradient_bytes() const { return slot_gradient_bytes_; }
  double tp_comm_ms_per_window() const { return tp_comm_ms_; }

 private:
  void check(const GridSpeeds& speed) const;
  std::vector<double> scaled(const std::vector<double>& speed) const;

  int tp_;
  int64_t batch_;
  ModelCosts window_costs_;  // one window's work and the units' bytes
  Partition even_;          // the even split of one group
  double work_per_ms_;      // a rank of speed 1
  double tp_comm_ms_;       // per window
  double slot_gradient_bytes_;
  Link dp_link_;
};

struct GridStep {
  double even, migrate, shares, both, ideal;
};
GridStep simulate_grid_step(const GridModel& m, const GridSpeeds& speed);

}  // namespace flextp

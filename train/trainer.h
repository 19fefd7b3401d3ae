#pragma once
// One training step, the whole of it: this replica's windows of the step in micro-steps (forward
// and backward each), the fault hook, the data-parallel gradient sum, clipping and the optimizer
// (or, when the loss or the gradient is not finite, a skipped step), then the balancer between
// steps. step() returns what happened as a StepReport; train.cpp's loop hands it to the
// console, the metrics file and the checkpoints, which read nothing else.
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/fault_hook.h"
#include "train/group_metrics.h"
#include "train/watchdog.h"
#include "data/batches.h"
#include "nn/gpt.h"
#include "optim/clip.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "parallel/balance/balancer.h"
#include "parallel/balance/step_clock.h"
#include "parallel/dp/gradient_sync.h"
#include "parallel/dp/grid.h"
#include "parallel/dp/window_shares.h"

namespace flextp {

struct StepReport {
  int64_t step = 0;   // counted from 1
  bool last = false;  // the run's final step
  double lr = 0;
  double loss = NAN, grad_norm = NAN;  // NaN where not finite or not computed (a skipped step)
  std::vector<MetricValues> metrics;    // the group metrics (train/group_metrics.h), by name
  bool skipped = false;
  int64_t bad_in_row = 0, bad_total = 0;  // skipped steps
  // A signal (SIGINT, SIGTERM) that some rank of the job was asked to stop by, learnt by every
  // rank in this step's exchange: all stop after this step (train/stop_signals.h). 0: go on.
  int stop_signal = 0;
  double ms = 0, tokens_per_s = 0;        // the whole step, the balancer's work included
  BalanceStep balance;                    // the plan, the policy's choice, the bytes moved, the links
  std::string partition_text;  // with several ranks: the partition after a migration
  std::optional<double> val_loss;  // set by the loop on the steps it evaluates
  Grid grid;                       // the process grid, and this rank's place in it
  GradientSyncStats dp_sync;       // the data-parallel gradient sum of this step
  ReplicaView replicas;            // several replicas: each one's windows in this step and speed
};

// This rank's replica in a data x tensor parallel grid (parallel/dp/grid.h). By default one
// replica: the whole batch, no data-parallel sum.
struct Replicas {
  Grid grid;
  Communicator* comm = nullptr;  // the data-parallel group of this rank's slot (null: one replica)
  int64_t bucket_bytes = 25 << 20;
  Communicator* world = nullptr;  // every rank of the grid (with several replicas)
};

// What a step reads of the run's settings.
struct StepSettings {
  CosineSchedule schedule;  // the learning rate of every step
  int64_t steps = 1;        // the run's last step: its report says `last`
  int64_t batch = 1, seq_len = 1;
  int64_t micro_batch = 0;   // windows per forward/backward (0: a replica's whole share)
  double grad_clip = 0;      // global gradient-norm limit (0: off)
  bool speed_shares = true;  // several replicas: windows in proportion to their speeds (else even)
  int monitor_window = 3;    // the span of the replicas' speed averages
  int64_t max_bad_steps = 10;
  std::string save;  // the checkpoint path, named when too many bad steps stop the run
};

class Trainer {
 public:
  // `on_skip` hears of a skipped step before too many in a row stop the run (its warning
  // comes before the error).
  Trainer(StepSettings settings, GPT& model, Optimizer& opt, StepClock& clock, Balancer& balancer, Watchdog& watchdog,
          BatchSampler sampler, FaultHook faults, std::function<void(const StepReport&)> on_skip, Replicas replicas = {});
  // Global step `step`, counted from 0 (a resumed run starts at its checkpoint's step).
  // `stop_request`, read once the backward is done: the signal this rank was asked to stop by
  // (0: none); it travels in the step's existing exchanges, no collective of its own.
  StepReport step(int64_t step, const std::function<int()>& stop_request = [] { return 0; });

 private:
  const StepSettings settings_;
  GPT& model_;
  std::vector<Parameter*> params_;
  Optimizer& opt_;
  StepClock& clock_;
  Balancer& balancer_;
  Watchdog& watchdog_;
  FaultHook faults_;
  BatchSampler sampler_;
  std::function<void(const StepReport&)> on_skip_;
  int64_t bad_in_row_ = 0, bad_total_ = 0;
  Replicas replicas_;
  std::unique_ptr<GradientSync> sync_;  // with several replicas
  WindowShares shares_;                 // the windows of each replica

  // The step's bookkeeping travels in one collective of the tensor-parallel group, after the
  // backward (and the data-parallel sum): every rank's monitor row and the squares of its
  // gradients (the norm, summed in rank order, the same on every rank). Under contention each
  // collective waits for the slowest rank's next time slice, so one exchange, not two. The row
  // holds the clock's counts up to the exchange plus the previous step's tail after it (the
  // optimizer): over the steps every ms is counted once, as when the row travelled at the end.
  // What travels: train/step_exchange.h.
  struct Tail {
    double compute_ms = 0, wait_ms = 0;
  };
  struct Bookkeeping {
    double compute_ms = 0, wait_ms = 0;  // the clock's counts of this step at the exchange
    double norm = NAN;
    std::vector<MetricValues> metrics;  // the group's values of the group metrics
    std::vector<RankReport> reports;  // every rank's, for the balancer
    int stop = 0;  // the largest stop request of the group's ranks
  };
  Tail tail_;  // the clock's counts after the last step's exchange
  Bookkeeping exchange_bookkeeping(const GradSquares& squares, const std::vector<MetricShares>& shares,
                                   int stop_request);

  // Clips the gradients to the global norm `norm` and steps the optimizer; a step whose loss or
  // norm is not finite is skipped instead (on every rank alike: both are reduced), and too many
  // in a row stop the run.
  void update(StepReport& r, int64_t step, double norm);

  bool several_replicas() const { return replicas_.comm && replicas_.comm->size() > 1; }
  // `local` reduced by `op` over this tensor-parallel slot's ranks in the replicas: the loss's sum,
  // and right after it the largest stop request (where the replicas have just met: it waits for
  // no one).
  double over_replicas(double local, ReduceOp op);
};

}  // namespace flextp

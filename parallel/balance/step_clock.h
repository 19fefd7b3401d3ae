#pragma once
// The step clock: the communicator every layer of a training run talks through. It splits this
// rank's step into compute and wait time (what the monitor measures), stretches compute by the
// emulated slowdown of the step, and does sum-all-reduces the way the cost model chose.
#include <cstdint>
#include <functional>

#include "parallel/balance/burst_meter.h"
#include "parallel/balance/slowdown.h"
#include "parallel/balance/sync_ledger.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/cost_model.h"

namespace flextp {

// Forwards to another communicator; keeps this rank's compute and wait time per step (and the
// time of each compute segment, for the burst meter), stretches
// its compute segments by the slowdown factor of the current step, and does sum-all-reduces the
// way the cost model chose (natively, or as reduce-scatter + all-gather).
class StepClock : public Communicator {
 public:
  StepClock(Communicator& inner, SlowdownSchedule schedule);
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const char* backend() const override { return inner_.backend(); }
  void all_reduce(Tensor& t, ReduceOp op) override;
  // The compute segment ends where the all-reduce starts; the handle's wait() counts as waiting,
  // and what the rank computes in between as compute. A sum the cost model does in two
  // collectives (reduce-scatter + all-gather) is done at once, as all_reduce.
  std::unique_ptr<PendingReduce> start_all_reduce(Tensor& t, ReduceOp op) override;
  void broadcast(Tensor& t, int root) override;
  void all_gather(const Tensor& in, Tensor& out) override;
  void reduce_scatter(const Tensor& in, Tensor& out) override;
  void send_recv(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) override;
  void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_bytes, Tensor& recv,
                    const std::vector<int64_t>& recv_bytes) override;
  void barrier() override;

  // Starts a step: its compute and wait counters restart, and its slowdown factor applies.
  void begin_step(int64_t step);
  // Ends the current compute segment (applying the slowdown), e.g. at the end of a step.
  void end_segment();
  double compute_ms() const { return compute_ms_; }
  double wait_ms() const { return wait_ms_; }
  double factor() const { return factor_; }
  // This step's compute segments in order (the last ends at end_segment).
  const std::vector<double>& segment_ms() const { return segments_; }
  // Once per step, after its last end_segment: how far this step's segments ran over their
  // means, in ms, and how their lateness was spread (BurstMeter).
  BurstSample step_burst() { return bursts_.observe(segments_); }
  // The work of the segments changed (units moved, skipped or restored): their means restart.
  void restart_bursts() { bursts_ = BurstMeter(); }
  // This step's collectives: when this rank reached each one and how long it was descheduled
  // inside them (sync_ledger.h).
  const SyncLedger& syncs() const { return syncs_; }
  // A collective on another communicator (a data-parallel group's), timed like this one's but
  // not one of this group's sync points (not in syncs()).
  void timed(const std::function<void()>& collective_call);
  // Bookkeeping collectives (the monitor's own all-gather) that must not count as waiting.
  Communicator& untimed() { return inner_; }
  void set_reduce_method(ReduceMethod m) { reduce_ = m; }
  // Training on a GPU: wait for its queued kernels before reading the clock.
  void set_sync_gpu(bool on) { sync_gpu_ = on; }

 private:
  class TimedReduce;
  // skip: timed as waiting but not entered in the ledger of this group's sync points.
  enum class Sync { enter, skip };
  // arrival: when this rank reached the sync point (a started all-reduce's start); -1: now.
  // Returns when this call reached it.
  template <typename F>
  double collective(F&& f, Sync sync = Sync::enter, double arrival = -1);
  Communicator& inner_;
  SlowdownSchedule schedule_;
  double factor_ = 1.0, compute_ms_ = 0, wait_ms_ = 0, segment_start_ = 0, step_start_ = 0;
  std::vector<double> segments_;
  BurstMeter bursts_;
  SyncLedger syncs_;
  ReduceMethod reduce_ = ReduceMethod::AllReduce;
  bool sync_gpu_ = false;
};

}  // namespace flextp

#pragma once
// The step clock: the communicator every layer of a training run talks through. It splits this
// rank's step into compute and wait time (what the monitor measures), stretches compute by the
// emulated slowdown of the step, and does sum-all-reduces the way the cost model chose.
#include <cstdint>
#include <functional>

#include "parallel/balance/slowdown.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/cost_model.h"

namespace flextp {

// Forwards to another communicator; keeps this rank's compute and wait time per step, stretches
// its compute segments by the slowdown factor of the current step, and does sum-all-reduces the
// way the cost model chose (natively, or as reduce-scatter + all-gather).
class StepClock : public Communicator {
 public:
  StepClock(Communicator& inner, SlowdownSchedule schedule);
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const char* backend() const override { return inner_.backend(); }
  void all_reduce(Tensor& t, ReduceOp op) override;
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
  // A collective on another communicator (a data-parallel group's), timed like this one's.
  void timed(const std::function<void()>& collective_call);
  // Bookkeeping collectives (the monitor's own all-gather) that must not count as waiting.
  Communicator& untimed() { return inner_; }
  void set_reduce_method(ReduceMethod m) { reduce_ = m; }
  // Training on a GPU: wait for its queued kernels before reading the clock (they run behind the
  // host; a compute segment ends when they have finished).
  void set_sync_gpu(bool on) { sync_gpu_ = on; }
  // The clock it reads and how it sleeps (the slowdown), in ms: the machine's unless a test's.
  void set_time(std::function<double()> now_ms, std::function<void(double)> sleep_ms);

 private:
  template <typename F>
  void collective(F&& f);
  double now() const;
  Communicator& inner_;
  SlowdownSchedule schedule_;
  double factor_ = 1.0, compute_ms_ = 0, wait_ms_ = 0, segment_start_ = 0;
  ReduceMethod reduce_ = ReduceMethod::AllReduce;
  bool in_collective_ = false, sync_gpu_ = false;
  std::function<double()> now_ms_;
  std::function<void(double)> sleep_ms_;
};

}  // namespace flextp

#pragma once
// The step clock: the communicator every layer of a training run talks through. It splits this
// rank's step into compute and wait time (what the monitor measures), stretches compute by the
// emulated slowdown of the step, and does sum-all-reduces the way the cost model chose.
#include <cstdint>
#include <functional>
#include <memory>

#include "parallel/balance/slowdown.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/cost_model.h"

namespace flextp {

// The queue the compute runs on, as the step clock sees it. On a GPU, kernels and NCCL's
// collectives queue on one stream (core/cuda/stream.h) behind the host: the clock synchronises it
// to end a compute segment, and marks the stream on both sides of each started all-reduce, so
// that the time the stream spent inside one (waiting for the other ranks) counts as waiting, not
// as compute. gpu_compute_stream() is the GPU's (CUDA events); tests inject their own.
class ComputeStream {
 public:
  virtual ~ComputeStream() = default;
  // Returns when everything queued so far has run.
  virtual void synchronize() = 0;
  // Runs `enqueue`, which queues work on the stream, between two marks: an id whose stream time
  // take_ms reads after the next synchronize.
  virtual int64_t timed(const std::function<void()>& enqueue) = 0;
  // After a synchronize: the ms the stream spent between the marks of `id`, which it frees.
  virtual double take_ms(int64_t id) = 0;
};
std::unique_ptr<ComputeStream> gpu_compute_stream();

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
  // The compute segment ends where the all-reduce starts; the handle's wait() counts as waiting,
  // and what the rank computes in between as compute. A sum the cost model does in two
  // collectives (reduce-scatter + all-gather) is done at once, as all_reduce.
  // On a device stream (set_sync_gpu), the time the stream spends inside the all-reduce (NCCL's
  // kernel waiting for the other ranks) counts as waiting, not as the compute around it.
  std::unique_ptr<PendingReduce> start_all_reduce(Tensor& t, ReduceOp op) override;
  // Another communicator's (a data-parallel group's) all-reduce: its wait and its time on the
  // device stream count as waiting, and starting it ends no compute segment (the backward
  // starts these between its kernels, without a GPU sync).
  std::unique_ptr<PendingReduce> start_timed(Communicator& other, Tensor& t, ReduceOp op);
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
  // Training on a GPU: wait for its queued kernels before reading the clock, and time each
  // started all-reduce on its stream (ComputeStream).
  void set_sync_gpu(bool on) { stream_ = on ? gpu_compute_stream() : nullptr; }
  void set_compute_stream(std::unique_ptr<ComputeStream> stream) { stream_ = std::move(stream); }
  // The clock it reads and how it sleeps (the slowdown), in ms: the machine's unless a test's.
  void set_time(std::function<double()> now_ms, std::function<void(double)> sleep_ms);

 private:
  class TimedReduce;
  template <typename F>
  void collective(F&& f);
  double now() const;
  Communicator& inner_;
  SlowdownSchedule schedule_;
  double factor_ = 1.0, compute_ms_ = 0, wait_ms_ = 0, segment_start_ = 0;
  ReduceMethod reduce_ = ReduceMethod::AllReduce;
  bool in_collective_ = false;
  std::unique_ptr<ComputeStream> stream_;
  std::vector<TimedReduce*> on_stream_;  // started all-reduces whose stream time is not counted yet
  std::function<double()> now_ms_;
  std::function<void(double)> sleep_ms_;
};

}  // namespace flextp

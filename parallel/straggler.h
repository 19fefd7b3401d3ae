#pragma once
// Straggler emulation, so that every heterogeneity claim is reproducible on any machine:
//   --straggler RANK:FACTOR[:FROM[:TO]]  slows RANK by FACTOR over steps [FROM, TO)
//   --straggler-trace FILE               per-step factors per rank from a CSV file:
//                                        "step,f0,f1,...": factors from that step on
// A slowed rank, after each compute segment (the work between two collectives), waits
// (FACTOR - 1) x that segment's measured compute time: it looks like a proportionally slower
// device, and the wait is counted as its compute time, never as communication.
#include <atomic>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "parallel/communicator.h"
#include "parallel/cost_model.h"

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

 private:
  std::vector<StragglerSpec> specs_;
  std::vector<std::pair<int64_t, std::vector<double>>> trace_;
  int ranks_ = 1;
};

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
  // Bookkeeping collectives (the monitor's own all-gather) that must not count as waiting.
  Communicator& untimed() { return inner_; }
  void set_reduce_method(ReduceMethod m) { reduce_ = m; }
  // Training on a GPU: wait for its queued kernels before reading the clock.
  void set_sync_gpu(bool on) { sync_gpu_ = on; }

 private:
  template <typename F>
  void collective(F&& f);
  Communicator& inner_;
  SlowdownSchedule schedule_;
  double factor_ = 1.0, compute_ms_ = 0, wait_ms_ = 0, segment_start_ = 0;
  ReduceMethod reduce_ = ReduceMethod::AllReduce;
  bool sync_gpu_ = false;
};

// Real contention: busy threads spinning beside this process for its lifetime.
class Contention {
 public:
  explicit Contention(int threads);
  ~Contention();
  Contention(const Contention&) = delete;
  Contention& operator=(const Contention&) = delete;

 private:
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
};

// "RANK:THREADS" of --contend.
std::pair<int, int> parse_contend(const std::string& spec);

}  // namespace flextp

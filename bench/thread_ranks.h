#pragma once
// Ranks played by threads of one process, for bench_simulate --oracle: each thread runs one
// rank's real balancer (parallel/balance/balancer.h) with a communicator of its own, and the
// collectives the balancer makes (the hybrid's share of importance skipped, a migration's totals)
// meet in shared memory. Weights do not travel: a unit that moves arrives as ones (the
// simulation reads decisions and unit counts, never weights).
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "parallel/comm/communicator.h"

namespace flextp {

// Where the threads' collectives meet: a barrier and one slot of bytes per rank.
class ThreadMeeting {
 public:
  explicit ThreadMeeting(int ranks) : ranks_(ranks), slots_(ranks) {}
  int ranks() const { return ranks_; }
  // Blocks until every rank has called it (as often); throws once a rank has failed.
  void wait();
  // A rank that failed: the others' waits throw instead of blocking for ever.
  void fail();
  // Ranks blocked in wait() now.
  int waiting();
  std::vector<char>& slot(int rank) { return slots_[rank]; }

 private:
  const int ranks_;
  std::mutex m_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool failed_ = false;
  std::vector<std::vector<char>> slots_;
};

class ThreadRank : public Communicator {
 public:
  ThreadRank(ThreadMeeting& meeting, int rank) : meeting_(meeting), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return meeting_.ranks(); }
  const char* backend() const override { return "threads"; }
  void all_reduce(Tensor& t, ReduceOp op) override;
  void broadcast(Tensor& t, int root) override;
  void all_gather(const Tensor& in, Tensor& out) override;
  void reduce_scatter(const Tensor& in, Tensor& out) override;
  void send_recv(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) override;
  void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_bytes, Tensor& recv,
                    const std::vector<int64_t>& recv_bytes) override;
  void barrier() override { meeting_.wait(); }

 private:
  ThreadMeeting& meeting_;
  int rank_;
  void post(const Tensor& t);  // this rank's tensor into its slot, then wait for the others'
};

}  // namespace flextp

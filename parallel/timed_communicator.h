#pragma once
// A communicator that forwards to another and keeps the time and bytes each primitive took:
// what the monitor subtracts from a rank's step time, and what benchmarks report.
#include <array>
#include <chrono>

#include "parallel/communicator.h"

namespace flextp {

enum class Primitive { AllReduce, Broadcast, AllGather, AllGatherV, ReduceScatter, SendRecv, AllToAllV, Barrier, Count };
const char* primitive_name(Primitive p);

struct PrimitiveStats {
  int64_t calls = 0;
  int64_t bytes = 0;  // payload this rank contributed
  double seconds = 0;
};

class TimedCommunicator : public Communicator {
 public:
  explicit TimedCommunicator(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const char* backend() const override { return inner_.backend(); }

  void all_reduce(Tensor& t, ReduceOp op) override;
  void broadcast(Tensor& t, int root) override;
  void all_gather(const Tensor& in, Tensor& out) override;
  void all_gather_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& rows_of) override;
  void reduce_scatter(const Tensor& in, Tensor& out) override;
  void send_recv(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) override;
  void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_bytes, Tensor& recv,
                    const std::vector<int64_t>& recv_bytes) override;
  void barrier() override;

  const PrimitiveStats& stats(Primitive p) const { return stats_[static_cast<size_t>(p)]; }
  double total_seconds() const;
  void reset() { stats_ = {}; }

 private:
  template <typename F>
  void timed(Primitive p, int64_t bytes, F&& f) {
    auto start = std::chrono::steady_clock::now();
    f();
    PrimitiveStats& s = stats_[static_cast<size_t>(p)];
    s.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    s.calls += 1;
    s.bytes += bytes;
  }
  Communicator& inner_;
  std::array<PrimitiveStats, static_cast<size_t>(Primitive::Count)> stats_{};
};

}  // namespace flextp

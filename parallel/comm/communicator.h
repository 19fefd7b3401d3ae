#pragma once
// The collective operations tensor parallelism needs, on tensors of the communicator's device.
// Backends: MPI (parallel/comm/mpi_communicator.h; GPU tensors staged through the host), NCCL
// (parallel/comm/nccl_communicator.h) and one rank (make_single_process_communicator, below: every
// operation a no-op or a copy, so the parallel model is the serial model). StepClock
// (parallel/balance/step_clock.h) wraps any of them to time the collectives.
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace flextp {

enum class ReduceOp { Sum, Max };

// An all-reduce in flight (Communicator::start_all_reduce). test() advances it without blocking
// and says whether it is done; wait() completes it, after which the tensor holds the reduction.
// Destroying one that is still running waits for it (a collective cannot be taken back).
class PendingReduce {
 public:
  virtual ~PendingReduce() = default;
  virtual bool test() = 0;
  virtual void wait() = 0;
  // Whether the reduction runs beside the compute queued after its start (MPI's, progressed by
  // the host while the device or the CPU computes), rather than in its place: queued on the
  // compute stream, which runs it between the kernels before and after it (NCCL's, here), or done
  // before start_all_reduce returned. Only the first overlaps anything (GradientSync's
  // buckets_early counts on it).
  virtual bool beside_compute() const { return false; }
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* backend() const = 0;

  // In place: every rank ends with the elementwise reduction over ranks.
  virtual void all_reduce(Tensor& t, ReduceOp op = ReduceOp::Sum) = 0;
  // Starts the same all-reduce and returns at once: `t` must stay alive and untouched until the
  // handle's wait(). Every rank starts a communicator's collectives in the same order. A backend
  // that cannot overlap (one rank, test doubles) runs it here and hands back a finished one.
  virtual std::unique_ptr<PendingReduce> start_all_reduce(Tensor& t, ReduceOp op = ReduceOp::Sum) {
    all_reduce(t, op);
    return finished_reduce();
  }
  virtual void broadcast(Tensor& t, int root) = 0;
  // out [size * n, ...] holds rank r's `in` at rows [r n, (r + 1) n).
  virtual void all_gather(const Tensor& in, Tensor& out) = 0;
  // in [size * n, ...] summed over ranks; rank r keeps rows [r n, (r + 1) n) in out.
  virtual void reduce_scatter(const Tensor& in, Tensor& out) = 0;
  // Grouped point-to-point: all sends and receives of this rank at once (no ordering deadlock).
  struct Transfer {
    int peer;
    Tensor buffer;  // sent from, or received into (its size says how much)
  };
  virtual void send_recv(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) = 0;
  // Each rank sends send_bytes[r] bytes of `send` (packed in rank order) to rank r and receives
  // recv_bytes[r] bytes from rank r into `recv` (packed in rank order). Buffers are f32/i32/...:
  // counts are in bytes so mixed payloads can travel in one call.
  virtual void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_bytes,
                            Tensor& recv, const std::vector<int64_t>& recv_bytes) = 0;
  virtual void barrier() = 0;

 protected:
  static std::unique_ptr<PendingReduce> finished_reduce() {
    struct Finished : PendingReduce {
      bool test() override { return true; }
      void wait() override {}
    };
    return std::make_unique<Finished>();
  }
};

// A one-rank communicator: the default of a single process.
std::unique_ptr<Communicator> make_single_process_communicator();

}  // namespace flextp

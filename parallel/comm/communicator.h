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

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* backend() const = 0;

  // In place: every rank ends with the elementwise reduction over ranks.
  virtual void all_reduce(Tensor& t, ReduceOp op = ReduceOp::Sum) = 0;
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
};

// A one-rank communicator: the default of a single process.
std::unique_ptr<Communicator> make_single_process_communicator();

}  // namespace flextp

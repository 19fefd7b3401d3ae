#pragma once
// Megatron's conjugate communication ops as autograd nodes, so that the tensor-parallel model
// reads like the serial one. With no communicator or one rank both are the identity.
//   copy_to_tensor_parallel:      forward identity,   backward all-reduce (sum)
//   reduce_from_tensor_parallel:  forward all-reduce, backward identity
#include <memory>

#include "core/tensor.h"
#include "parallel/comm/communicator.h"

namespace flextp {

// Overlap::Deferred makes copy_to_tensor_parallel's backward start its all-reduce and leave the
// wait to the autograd engine (defer_gradients), which runs other ready nodes meanwhile: what a
// forward of interleaved batch chunks (GPT::set_tp_chunks) needs for its backward to overlap.
enum class Overlap { Blocking, Deferred };

Tensor copy_to_tensor_parallel(const Tensor& x, Communicator* comm, Overlap overlap = Overlap::Blocking);
Tensor reduce_from_tensor_parallel(const Tensor& x, Communicator* comm);

// reduce_from_tensor_parallel, started: `out` is the reduction as autograd sees it at once, and
// holds its values once finish() returned. The caller computes other work meanwhile.
class StartedReduce {
 public:
  StartedReduce() = default;
  StartedReduce(const Tensor& x, Communicator* comm);
  // Waits for the all-reduce (if still running) and returns the reduced tensor.
  const Tensor& finish();
  // Advances the all-reduce without blocking (MPI progresses only inside its calls).
  void poll();

 private:
  Tensor out_;
  std::unique_ptr<PendingReduce> pending_;
};

}  // namespace flextp

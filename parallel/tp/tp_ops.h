#pragma once
// Megatron's conjugate communication ops as autograd nodes, so that the tensor-parallel model
// reads like the serial one. With no communicator or one rank both are the identity.
//   copy_to_tensor_parallel:      forward identity,   backward all-reduce (sum)
//   reduce_from_tensor_parallel:  forward all-reduce, backward identity
#include "core/tensor.h"
#include "parallel/comm/communicator.h"

namespace flextp {

Tensor copy_to_tensor_parallel(const Tensor& x, Communicator* comm);
Tensor reduce_from_tensor_parallel(const Tensor& x, Communicator* comm);

}  // namespace flextp

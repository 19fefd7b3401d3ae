#pragma once
// NCCL: the GPU backend of the Communicator (tensors on cuda:N). The unique id is created by
// rank 0 and broadcast over MPI, so the same mpirun launch runs it. Built when CUDA is on.
#include <memory>

#include "parallel/comm/communicator.h"

namespace flextp {

// One rank per process; `device` is this process's GPU. MPI must be initialised.
std::unique_ptr<Communicator> make_nccl_communicator(int device);
// Over the world's ranks that pass the same `color` (>= 0), in placed order (mpi_place_ranks) (one group of a
// data x tensor parallel grid; a unique id per group). Every world rank must call it.
std::unique_ptr<Communicator> make_nccl_communicator(int device, int color);

}  // namespace flextp

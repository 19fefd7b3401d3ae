#pragma once
// MPI: the launcher-agnostic way to run one process per rank (mpirun, srun). Host buffers go to
// MPI directly; GPU buffers are staged through host memory.
#include <memory>
#include <string>
#include <vector>

#include "parallel/comm/communicator.h"

namespace flextp {

// True when this process was started by an MPI launcher (mpirun, srun, ...).
bool launched_by_mpi();

// Initialises MPI once (thread level FUNNELED) and finalises it at exit.
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
  // Ends every rank at once: an error on one rank must not leave the others waiting forever.
  [[noreturn]] static void abort_all(int code);
  static bool active();
};

// Orders the ranks of every communicator made after it (make_mpi_communicator and
// make_nccl_communicator, the world's included) by host when `by_host` (parallel/comm/placement.h:
// consecutive ranks share a host, world rank 0 stays rank 0), else in the launcher's order; returns
// the host of each rank in that order. A collective: every world rank calls it, before making any
// communicator.
std::vector<std::string> mpi_place_ranks(bool by_host);
// This rank's key in that order, for MPI_Comm_split.
int mpi_place_key();

// A communicator over the world's ranks that pass the same `color` (>= 0), in placed order:
// e.g. a smaller tensor-parallel group inside one run; all of them when every rank passes 0. MPI
// must be initialised, and every world rank must call it.
std::unique_ptr<Communicator> make_mpi_communicator(int color = 0);

// The ranks of MPI_COMM_WORLD on this machine (MPI's shared-memory split; a collective). 1 in a
// build without MPI.
int mpi_ranks_on_this_node();

}  // namespace flextp

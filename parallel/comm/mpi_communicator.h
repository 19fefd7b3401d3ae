#pragma once
// MPI: the launcher-agnostic way to run one process per rank (mpirun, srun). Host buffers go to
// MPI directly; GPU buffers are staged through host memory.
#include <memory>

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

// How a rank waits for a collective (or a transfer) that others have not reached yet. Spinning
// answers fastest and is the default. Sleeping between polls gives the core back while waiting:
// when a rank shares its core with a noisy neighbour, every millisecond it spins in a wait is a
// millisecond of its fair share spent on nothing, and the neighbour gets the core back when the
// rank's compute resumes; sleeping lets the neighbour run during the wait instead, so that the
// scheduler owes the rank that time when it has work again. Polls first spin for `spin_us`, then
// sleep `sleep_us` between tests. Applies to communicators made after the call.
struct MpiIdleWait {
  bool sleep = false;
  double spin_us = 20, sleep_us = 50;
};
void set_mpi_idle_wait(const MpiIdleWait& wait);

// A communicator over MPI_COMM_WORLD (MPI must be initialised).
std::unique_ptr<Communicator> make_mpi_communicator();
// A communicator over the world's ranks that pass the same `color` (>= 0), in world-rank order:
// e.g. a smaller tensor-parallel group inside one run. Every world rank must call it.
std::unique_ptr<Communicator> make_mpi_communicator(int color);

}  // namespace flextp

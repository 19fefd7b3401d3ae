#pragma once
// OpenMP threads per rank. Every process that starts one OpenMP thread per core makes several
// ranks on one machine run cores x ranks threads on its cores (4 ranks on 2 cores: 8 threads, a
// step 12x slower than with one thread each). When OMP_NUM_THREADS is not set, each rank takes
// its share of the cores instead.
#include <string>

namespace flextp {

struct RankThreads {
  int threads = 1;  // OpenMP threads of this rank
  std::string why;  // for the run's header, e.g. "2 cores / 2 ranks on this node"
};

// The choice from its inputs: `omp_num_threads` is the environment's OMP_NUM_THREADS (nullptr
// when unset), which decides when it is a whole number >= 1; else `cores` (those this process may
// run on) / `local_ranks` (the ranks on this machine, this one included), at least 1.
RankThreads choose_rank_threads(const char* omp_num_threads, int cores, int local_ranks);

// The cores this process may run on (its CPU affinity; the online cores where that is unknown).
int cores_of_this_process();

// The ranks on this machine: the launcher's count (OpenMPI's OMPI_COMM_WORLD_LOCAL_SIZE, MPICH's
// MPI_LOCALNRANKS), else MPI's shared-memory split when MPI is running, else 1. Under MPI without
// a launcher count every rank must call it (a collective).
int ranks_on_this_node();

// Chooses from this process's environment, cores and node, and sets OpenMP's thread count.
RankThreads set_rank_threads();

}  // namespace flextp

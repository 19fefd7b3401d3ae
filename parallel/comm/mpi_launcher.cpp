// Whether an MPI launcher started this process: its environment says so, with or without MPI
// in this build (a build without MPI must still notice mpirun and refuse it).
#include <cstdlib>

#include "parallel/comm/mpi_communicator.h"

namespace flextp {

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID"})
    if (std::getenv(v)) return true;
  return false;
}

}  // namespace flextp

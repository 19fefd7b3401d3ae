// Without CUDA, or without MPI (which hands NCCL its unique id), there is no NCCL: asking for it
// says how to get it.
#include "core/error.h"
#include "parallel/comm/nccl_communicator.h"

namespace flextp {

std::unique_ptr<Communicator> make_nccl_communicator(int) {
  FLEXTP_FAIL("this flextp build has no NCCL backend: it needs CUDA and MPI (cmake -DFLEXTP_CUDA=ON, with MPI installed)");
}

std::unique_ptr<Communicator> make_nccl_communicator(int device, int) { return make_nccl_communicator(device); }

}  // namespace flextp

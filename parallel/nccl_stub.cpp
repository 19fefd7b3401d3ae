// Without CUDA there is no NCCL: asking for it says how to get it.
#include "core/error.h"
#include "parallel/nccl_communicator.h"

namespace flextp {

std::unique_ptr<Communicator> make_nccl_communicator(int) {
  FLEXTP_FAIL("this flextp build has no NCCL backend: rebuild with CUDA (cmake -DFLEXTP_CUDA=ON)");
}

}  // namespace flextp

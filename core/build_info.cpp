#include "core/dtype.h"

namespace flextp {

bool cuda_compiled() {
#ifdef FLEXTP_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace flextp

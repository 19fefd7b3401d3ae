#include "core/device_choice.h"

#include <cstdlib>

#include "core/cuda/cuda_runtime_api.h"
#include "core/error.h"

namespace flextp {
namespace {

// The launcher's rank of this process among those on its node; 0 when not launched.
int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}

}  // namespace

Device choose_device(const std::string& spec) {
  Device d = Device::parse(spec);
  if (d.is_cpu()) return d;
  FLEXTP_CHECK(cuda_compiled(), "device ", spec, " needs the CUDA backend, which this flextp build has not "
               "(rebuild where nvcc is found, or with cmake -DFLEXTP_CUDA=ON)");
  int count = cuda::device_count();
  FLEXTP_CHECK(count > 0, "device ", spec, ": no GPU is visible (nvidia-smi; CUDA_VISIBLE_DEVICES)");
  if (spec == "cuda") d = Device::cuda(local_rank() % count);
  FLEXTP_CHECK(d.index < count, "device ", spec, ": only ", count, " GPU", count == 1 ? " is" : "s are",
               " visible");
  cuda::use_device(d.index);
  return d;
}

}  // namespace flextp

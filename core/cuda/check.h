#pragma once
// Turns CUDA status codes into flextp::Error naming the call and the code. cuBLAS (core/cuda/blas.cu)
// and NCCL (parallel/comm/nccl_communicator.cpp) have macros of the same form beside their calls.
#include <cuda_runtime.h>

#include "core/error.h"

#define FLEXTP_CUDA_CHECK(call)                                                               \
  do {                                                                                        \
    cudaError_t flextp_err_ = (call);                                                         \
    FLEXTP_CHECK(flextp_err_ == cudaSuccess, "CUDA call ", #call, " failed: ",                \
                 cudaGetErrorName(flextp_err_), " (", cudaGetErrorString(flextp_err_),         \
                 "); check that a GPU is visible (nvidia-smi) and has free memory");          \
  } while (0)

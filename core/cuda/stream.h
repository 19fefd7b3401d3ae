#pragma once
// The one CUDA stream of each device that every kernel, cuBLAS call, copy and NCCL collective of
// flextp runs on. One stream keeps them in order without events, and lets the caching allocator
// hand a freed block to the next op at once: that op runs after every earlier use of the block.
#include <cuda_runtime.h>

namespace flextp::cuda {

// The stream of the current device (cudaSetDevice), created on first use.
cudaStream_t stream();

}  // namespace flextp::cuda

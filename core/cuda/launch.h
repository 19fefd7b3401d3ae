#pragma once
// Launch helpers shared by the CUDA kernels: grid sizes, the stream, block-wide reductions.
#include <cstddef>

#include "core/cuda/check.h"
#include "core/cuda/stream.h"
#include "core/dispatch.h"

namespace flextp::cuda {

constexpr int kBlock = 256;

inline unsigned grid_for(size_t n) {
  size_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < (1u << 30) ? blocks : (1u << 30));  // grid loops cover the rest
}

// The CPU's dispatch over f32 and f64 (core/dispatch.h), for the kernel templates here too.
using detail::dispatch_float;

#define FLEXTP_CUDA_GRID_LOOP(i, n)                                                      \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<size_t>(blockDim.x) * gridDim.x)

// Every launch is followed by this: a bad configuration names the kernel's op.
#define FLEXTP_CUDA_LAUNCHED(op)                                                       \
  do {                                                                                 \
    cudaError_t flextp_err_ = cudaGetLastError();                                      \
    FLEXTP_CHECK(flextp_err_ == cudaSuccess, "CUDA kernel of ", op, " failed to launch: ", \
                 cudaGetErrorName(flextp_err_), " (", cudaGetErrorString(flextp_err_), ")"); \
  } while (0)

#ifdef __CUDACC__
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T>
__device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The sum (or max) of v over the block, returned to every thread. blockDim.x is a multiple of
// 32 and at most 1024. Safe to call several times in a row.
template <typename T, bool kMax = false>
__device__ T block_reduce(T v) {
  __shared__ T partial[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // an earlier call may still be reading partial
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  T identity = kMax ? -INFINITY : T(0);
  T r = lane < warps ? partial[lane] : identity;
  return kMax ? warp_max(r) : warp_sum(r);
}
template <typename T>
__device__ T block_sum(T v) { return block_reduce<T, false>(v); }
template <typename T>
__device__ T block_max(T v) { return block_reduce<T, true>(v); }
#endif

}  // namespace flextp::cuda

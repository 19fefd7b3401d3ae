#include "core/cuda/bf16.h"

#include <cuda_bf16.h>

#include "core/cuda/launch.h"

namespace flextp::cuda {
namespace {

__global__ void to_bf16_kernel(const float* src, __nv_bfloat16* dst, size_t n) {
  FLEXTP_CUDA_GRID_LOOP(i, n) dst[i] = __float2bfloat16_rn(src[i]);
}

__global__ void from_bf16_kernel(const __nv_bfloat16* src, float* dst, size_t n) {
  FLEXTP_CUDA_GRID_LOOP(i, n) dst[i] = __bfloat162float(src[i]);
}

}  // namespace

void f32_to_bf16(const float* src, void* dst, size_t n) {
  if (!n) return;
  to_bf16_kernel<<<grid_for(n), kBlock, 0, stream()>>>(src, static_cast<__nv_bfloat16*>(dst), n);
  FLEXTP_CUDA_LAUNCHED("f32 to bf16");
}

Tensor bf16_copy(const float* src, int64_t n, Device device) {
  Tensor b = Tensor::empty({n}, DType::BF16, device);
  f32_to_bf16(src, b.raw(), static_cast<size_t>(n));
  return b;
}

void bf16_to_f32(const void* src, float* dst, size_t n) {
  if (!n) return;
  from_bf16_kernel<<<grid_for(n), kBlock, 0, stream()>>>(static_cast<const __nv_bfloat16*>(src), dst, n);
  FLEXTP_CUDA_LAUNCHED("bf16 to f32");
}

}  // namespace flextp::cuda

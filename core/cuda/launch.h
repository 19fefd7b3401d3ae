#pragma once
// Launch helpers shared by the CUDA kernels.
#include <cstddef>

#include "core/cuda/check.h"
#include "core/dtype.h"

namespace flextp::cuda {

constexpr int kBlock = 256;

inline unsigned grid_for(size_t n) { return static_cast<unsigned>((n + kBlock - 1) / kBlock); }

// Runs f(float{}) or f(double{}) for a floating-point dtype.
template <typename F>
void dispatch_float(DType t, const char* op, F&& f) {
  if (t == DType::F32)
    f(float{});
  else if (t == DType::F64)
    f(double{});
  else
    FLEXTP_FAIL(op, " needs f32 or f64 tensors, not ", dtype_name(t));
}

#define FLEXTP_CUDA_GRID_LOOP(i, n)                                                      \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<size_t>(blockDim.x) * gridDim.x)

}  // namespace flextp::cuda

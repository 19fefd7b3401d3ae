// GPU kernel of core/ops/reduce.h: a two-pass sum in double (as on the CPU), deterministic.
#include <algorithm>

#include "core/cuda/launch.h"
#include "core/ops/reduce.h"

namespace flextp::cuda {
namespace {

constexpr unsigned kMaxPartials = 1024;

template <typename T>
__global__ void partial_sums_kernel(const T* x, size_t n, double* partial) {
  double s = 0;
  FLEXTP_CUDA_GRID_LOOP(i, n) s += static_cast<double>(x[i]);
  s = block_sum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

template <typename T>
__global__ void finish_sum_kernel(const double* partial, unsigned count, T* out) {
  double s = 0;
  for (unsigned i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] = static_cast<T>(s);
}

}  // namespace

void sum_all(const Tensor& x, Tensor& out) {
  size_t n = x.numel();
  unsigned blocks = std::max(1u, std::min(grid_for(n), kMaxPartials));
  Tensor partial = Tensor::empty({static_cast<int64_t>(blocks)}, DType::F64, x.device());
  dispatch_float(x.dtype(), "sum", [&](auto tag) {
    using T = decltype(tag);
    partial_sums_kernel<T><<<blocks, kBlock, 0, stream()>>>(x.data<T>(), n, partial.data<double>());
    FLEXTP_CUDA_LAUNCHED("sum");
    finish_sum_kernel<T><<<1, kBlock, 0, stream()>>>(partial.data<double>(), blocks, out.data<T>());
    FLEXTP_CUDA_LAUNCHED("sum");
  });
}

}  // namespace flextp::cuda

// GPU kernel of core/ops/dropout.h: the same counter-based mask as the CPU (core/random.h).
#include "core/cuda/launch.h"
#include "core/ops/dropout.h"
#include "core/random.h"

namespace flextp::cuda {
namespace {

template <typename T>
__global__ void dropout_kernel(const T* x, T* y, size_t n, double p, uint64_t seed,
                               uint64_t rng_stream, uint64_t first, T keep_scale) {
  FLEXTP_CUDA_GRID_LOOP(i, n) y[i] = rng::uniform(first + i, rng_stream, seed) >= p ? x[i] * keep_scale : T(0);
}

}  // namespace

void dropout_apply(const Tensor& x, double p, uint64_t seed, uint64_t rng_stream, uint64_t first, Tensor& y) {
  size_t n = x.numel();
  if (n == 0) return;
  dispatch_float(x.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    dropout_kernel<T><<<grid_for(n), kBlock, 0, stream()>>>(x.data<T>(), y.data<T>(), n, p, seed,
                                                            rng_stream, first, T(1.0 / (1.0 - p)));
  });
  FLEXTP_CUDA_LAUNCHED("dropout");
}

}  // namespace flextp::cuda

#include "core/ops/dropout.h"

#include "core/dispatch.h"
#include "core/parallel_for.h"
#include "core/random.h"

namespace flextp::cpu {

void dropout_apply(const Tensor& x, double p, uint64_t seed, uint64_t stream, uint64_t first, Tensor& y) {
  detail::dispatch_float(x.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    T keep_scale = T(1.0 / (1.0 - p));
    parallel_for(x.numel(), 1 << 13, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        py[i] = rng::uniform(first + static_cast<uint64_t>(i), stream, seed) >= p ? px[i] * keep_scale : T(0);
    });
  });
}

}  // namespace flextp::cpu

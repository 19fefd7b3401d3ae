// GPU side of core/ops/matmul.h: one strided-batched cuBLAS GEMM per call.
#include "core/cuda/blas.h"
#include "core/cuda/launch.h"
#include "core/ops/matmul.h"

namespace flextp::cuda {

void matmul(const Tensor& a, const Tensor& b, Tensor& c, bool ta, bool tb, bool accumulate, MatmulPrecision precision) {
  int64_t batch = c.ndim() == 3 ? c.size(0) : 1;
  int64_t m = c.size(-2), n = c.size(-1);
  int64_t k = a.size(ta ? -2 : -1);
  dispatch_float(c.dtype(), "matmul", [&](auto tag) {
    using T = decltype(tag);
    MatmulCall<T> call = matmul_call(a.data<T>(), b.data<T>(), m, n, k, ta, tb);
    gemm<T>(m, n, k, call.a, call.b, c.data<T>(), call.ldc, call.stride_c, batch, T(1),
            accumulate ? T(1) : T(0), precision);
  });
}

}  // namespace flextp::cuda

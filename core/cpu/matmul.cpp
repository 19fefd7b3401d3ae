#include "core/ops/matmul.h"

#include <type_traits>

#include "core/cpu/eigen.h"
#include "core/cpu/sgemm.h"
#include "core/dispatch.h"

namespace flextp::cpu {
namespace {

template <typename T>
void gemm(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
          bool accumulate) {
  // Big f32 products go to the packed AVX2 kernel; small ones and f64 stay with Eigen.
  if constexpr (std::is_same_v<T, float>) {
    if (sgemm_available() && static_cast<double>(m) * n * k >= 65536.0) {
      sgemm(ta, tb, m, n, k, a, ta ? m : k, b, tb ? k : n, c, n, accumulate);
      return;
    }
  }
  eigen_gemm(ta, tb, m, n, k, a, ta ? m : k, b, tb ? k : n, c, n, accumulate);
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, Tensor& c, bool ta, bool tb, bool accumulate, MatmulPrecision) {
  int64_t batch = c.ndim() == 3 ? c.size(0) : 1;
  int64_t m = c.size(-2), n = c.size(-1);
  int64_t k = a.size(ta ? -2 : -1);
  detail::dispatch_float(c.dtype(), "matmul", [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = c.data<T>();
    if (batch == 1) {  // Eigen spreads one big product over the threads itself
      gemm(pa, pb, pc, m, n, k, ta, tb, accumulate);
      return;
    }
    // Many small products: one per thread at a time (Eigen runs single-threaded inside).
#pragma omp parallel for schedule(static)
    for (int64_t s = 0; s < batch; ++s)
      gemm(pa + s * m * k, pb + s * k * n, pc + s * m * n, m, n, k, ta, tb, accumulate);
  });
}

}  // namespace flextp::cpu

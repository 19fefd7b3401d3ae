#pragma once
// The loop every elementwise CPU kernel shares: dispatch on the float dtype, split the flat
// tensors into parallel chunks, and let the kernel write its Eigen array expression per chunk.
// A kernel is then only its formula (see silu.cpp).
#include <cstdint>

#include "core/cpu/eigen.h"
#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {

// Chunks big enough that a thread's share outweighs waking it.
constexpr int64_t kElementwiseGrain = 1 << 13;

// y = f(x): f(out, x) assigns to `out` (a chunk of y) an expression of `x` (the same chunk of x).
template <typename F>
void map_elementwise(const char* op, const Tensor& x, Tensor& y, F&& f) {
  detail::dispatch_float(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(x.numel(), kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      VectorMap<T> out(py + lo, hi - lo);
      f(out, ConstVectorMap<T>(px + lo, hi - lo));
    });
  });
}

// dx = f(x, dy), chunk by chunk, for a backward: f(out, x, dy).
template <typename F>
void map_elementwise(const char* op, const Tensor& x, const Tensor& dy, Tensor& dx, F&& f) {
  detail::dispatch_float(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pg = dy.data<T>();
    T* pd = dx.data<T>();
    parallel_for(x.numel(), kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      VectorMap<T> out(pd + lo, hi - lo);
      f(out, ConstVectorMap<T>(px + lo, hi - lo), ConstVectorMap<T>(pg + lo, hi - lo));
    });
  });
}

}  // namespace flextp::cpu

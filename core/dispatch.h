#pragma once
// Where an op chooses its kernel: core/cpu/<op>.cpp on the CPU, core/cuda/<op>.cu on the GPU.
// Both implement the functions declared in namespace cpu and cuda of core/ops/<op>.h.
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace flextp::detail {

[[noreturn]] inline void no_cuda_kernel(const char* fn) {
  FLEXTP_FAIL(fn, " was given a CUDA tensor, but this flextp build has no CUDA backend");
}

// Runs f(float{}) or f(double{}) for a floating-point dtype (the CPU kernels are templates).
template <typename F>
void dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32: f(float{}); return;
    case DType::F64: f(double{}); return;
    default: FLEXTP_FAIL(op, " needs f32 or f64 tensors, not ", dtype_name(t));
  }
}

inline void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  FLEXTP_CHECK(a.device() == b.device(), op, ": tensors on different devices: ", a.str(), " and ",
               b.str());
}

// The values of a small i32 tensor (token ids, targets) on the host: read in place on the CPU,
// copied from a GPU, so that the op checks them once, before any kernel, on either device.
inline const int32_t* host_ints(const Tensor& t, std::vector<int32_t>& copy) {
  if (t.device().is_cpu()) return t.data<int32_t>();
  copy = t.to_vector<int32_t>();
  return copy.data();
}

inline void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  FLEXTP_CHECK(a.dtype() == b.dtype(), op, ": dtypes differ: ", a.str(), " and ", b.str());
}

}  // namespace flextp::detail

#ifdef FLEXTP_WITH_CUDA
#define FLEXTP_DISPATCH(device, fn, ...) \
  ((device).is_cuda() ? ::flextp::cuda::fn(__VA_ARGS__) : ::flextp::cpu::fn(__VA_ARGS__))
#else
// (The comma keeps both branches of one type; no_cuda_kernel throws before the CPU call.)
#define FLEXTP_DISPATCH(device, fn, ...)                                              \
  ((device).is_cuda() ? (::flextp::detail::no_cuda_kernel(#fn), ::flextp::cpu::fn(__VA_ARGS__)) \
                      : ::flextp::cpu::fn(__VA_ARGS__))
#endif

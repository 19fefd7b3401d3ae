#pragma once
// f32 <-> bf16 conversion on the compute stream, for the places that hand bf16 to a library
// (cuDNN's fused attention, cuBLAS's bf16 GEMMs) while the model itself stays f32. bf16 data is
// passed as raw device memory of 2-byte elements (or a BF16 tensor holding it); rounding is to
// nearest even.
#include <cstddef>

#include "core/tensor.h"

namespace flextp::cuda {

void f32_to_bf16(const float* src, void* dst, size_t n);
void bf16_to_f32(const void* src, float* dst, size_t n);

// A new bf16 tensor [n] on `device` holding src[0..n) rounded.
Tensor bf16_copy(const float* src, int64_t n, Device device);

}  // namespace flextp::cuda

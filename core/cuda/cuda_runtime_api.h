#pragma once
// The few CUDA runtime services the core needs (memory, copies, fills). Implemented in
// runtime.cu when flextp is built with CUDA, and by stubs that explain how to get CUDA otherwise.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace flextp::cuda {

int device_count();
// Makes `device` current for this thread (a process trains on one GPU).
void use_device(int device);
// How f32 matmuls use the tensor cores: not at all (f32), TF32 (10-bit mantissa inputs), or bf16
// (the operands rounded to bf16 on the fly; the weights, activations and optimizer state stay
// f32). Sums and results are f32 in all three.
enum class MatmulPrecision { f32, tf32, bf16 };
void set_matmul_precision(MatmulPrecision precision);
MatmulPrecision matmul_precision();
// The precision of the flags --tf32 and --bf16 (which exclude each other).
inline MatmulPrecision matmul_precision_of(bool tf32, bool bf16) {
  return bf16 ? MatmulPrecision::bf16 : tf32 ? MatmulPrecision::tf32 : MatmulPrecision::f32;
}
// "fp32", "tf32" or "bf16": the flag's name, and what bench/torch_gpt.py takes.
inline const char* precision_name(MatmulPrecision p) {
  return p == MatmulPrecision::bf16 ? "bf16" : p == MatmulPrecision::tf32 ? "tf32" : "fp32";
}
// Whether attention runs on cuDNN's fused flash attention in bf16 (core/cuda/cudnn_attention.h)
// rather than on the own f32 kernels, and which of the two the last attention call took (with
// the reason when cuDNN could not take it).
void set_cudnn_attention(bool on);
bool cudnn_attention();
std::string attention_path();
// --attention: "cudnn", "own", or "auto": cuDNN exactly when the matmuls are bf16, the precision
// cuDNN's attention takes (set the matmul precision first).
inline void choose_attention(const std::string& choice) {
  set_cudnn_attention(choice == "cudnn" || (choice == "auto" && matmul_precision() == MatmulPrecision::bf16));
}
void* raw_malloc(int device, size_t bytes);
void raw_free(int device, void* p);
// Copies between host and device memory; each side is "on_device" or host.
void memcpy(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t bytes);
// Waits for every kernel and copy queued so far (for timing and before reading results).
void synchronize();
// Elementwise fills on device memory (fp32/fp64/int32 by element size).
void fill(void* dst, size_t n, DType dtype, double value);
// The same counter-based random numbers as the CPU (see core/random.h).
void fill_uniform_f32(float* dst, size_t n, uint64_t seed, uint64_t stream, float lo, float hi);
void fill_normal_f32(float* dst, size_t n, uint64_t seed, uint64_t stream, float mean, float std);

}  // namespace flextp::cuda

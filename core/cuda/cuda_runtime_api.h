#pragma once
// The few CUDA runtime services the core needs (memory, copies, fills). Implemented in
// runtime.cu when flextp is built with CUDA, and by stubs that explain how to get CUDA otherwise.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace flextp::cuda {

int device_count();
// The GPU's name as CUDA gives it ("NVIDIA H200").
std::string device_name(int device);
// Makes `device` current for this thread (a process trains on one GPU).
void use_device(int device);
// Which attention path the last attention call took (cuDNN's or the own kernels, with the reason
// when cuDNN could not take it): a report for the console, not a setting (see core/numerics.h).
std::string attention_path();
void* raw_malloc(int device, size_t bytes);
void raw_free(int device, void* p);
// Copies between host and device memory; each side is "on_device" or host.
void memcpy(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t bytes);
// Waits for every kernel and copy queued so far (for timing and before reading results).
void synchronize();
// Elementwise fills on device memory (fp32/fp64/int32 by element size).
void fill(void* dst, size_t n, DType dtype, double value);
// Keeps `device` busy for about `ms` milliseconds and returns when it is done: a kernel that fills
// every SM and spins on the GPU's clock, launched from the calling thread on a stream of that
// thread's own (never flextp's compute stream), so that the training's kernels wait for SMs as
// they would beside another job's. --contend's noisy neighbour on a GPU (ms 0: a launch only).
void spin(int device, double ms);

}  // namespace flextp::cuda

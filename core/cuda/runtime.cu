// The CUDA side of core/cuda/cuda_runtime_api.h: device memory, copies, fills.
#include <cuda_runtime.h>

#include <array>
#include <mutex>

#include "core/cuda/check.h"
#include "core/cuda/cuda_runtime_api.h"
#include "core/cuda/stream.h"

namespace flextp::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

template <typename T>
__global__ void fill_kernel(T* dst, size_t n, T value) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = value;
}

constexpr int kMaxDevices = 64;

}  // namespace

cudaStream_t stream() {
  static std::array<cudaStream_t, kMaxDevices> streams{};
  static std::mutex mu;
  int device = 0;
  FLEXTP_CUDA_CHECK(cudaGetDevice(&device));
  FLEXTP_CHECK(device < kMaxDevices, "CUDA device ", device, " beyond the ", kMaxDevices, " flextp supports");
  std::lock_guard<std::mutex> lock(mu);
  if (!streams[device]) FLEXTP_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking));
  return streams[device];
}

void use_device(int device) { FLEXTP_CUDA_CHECK(cudaSetDevice(device)); }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

std::string device_name(int device) {
  cudaDeviceProp props{};
  FLEXTP_CUDA_CHECK(cudaGetDeviceProperties(&props, device));
  return props.name;
}

void* raw_malloc(int device, size_t bytes) {
  FLEXTP_CUDA_CHECK(cudaSetDevice(device));
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the error: the allocator may free its cache and retry
    return nullptr;
  }
  return p;
}

void raw_free(int device, void* p) {
  FLEXTP_CUDA_CHECK(cudaSetDevice(device));
  FLEXTP_CUDA_CHECK(cudaStreamSynchronize(stream()));  // kernels may still read the block
  FLEXTP_CUDA_CHECK(cudaFree(p));
}

void memcpy(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t bytes) {
  cudaMemcpyKind kind = dst_on_device ? (src_on_device ? cudaMemcpyDeviceToDevice
                                                       : cudaMemcpyHostToDevice)
                                      : (src_on_device ? cudaMemcpyDeviceToHost
                                                       : cudaMemcpyHostToHost);
  if (bytes == 0) return;
  // On the compute stream, after every kernel that wrote src; a host side waits for the copy.
  FLEXTP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream()));
  if (!dst_on_device || !src_on_device) FLEXTP_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void synchronize() { FLEXTP_CUDA_CHECK(cudaStreamSynchronize(stream())); }

void fill(void* dst, size_t n, DType dtype, double value) {
  if (n == 0) return;
  switch (dtype) {
    case DType::F32:
      fill_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<float*>(dst), n, static_cast<float>(value));
      break;
    case DType::F64:
      fill_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<double*>(dst), n, value);
      break;
    case DType::I32:
      fill_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<int32_t*>(dst), n, static_cast<int32_t>(value));
      break;
    default: FLEXTP_FAIL("cuda fill of ", dtype_name(dtype), " tensors");
  }
  FLEXTP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace flextp::cuda

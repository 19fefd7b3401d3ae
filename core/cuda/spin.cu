// The busy kernel of --contend on a GPU (core/cuda/cuda_runtime_api.h: spin). Its blocks fill
// every SM's thread slots and each spins on the GPU's global timer until its time is up, so for
// that long the training's kernels find no free SM, as beside another job's kernels.
#include <cuda_runtime.h>

#include "core/cuda/check.h"
#include "core/cuda/cuda_runtime_api.h"

namespace flextp::cuda {
namespace {

__device__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(uint64_t ns) {
  uint64_t until = global_ns() + ns;
  while (global_ns() < until) {
  }
}

constexpr int kSpinThreads = 256;

// This thread's stream for spinning on `device`, its own and never synchronised with flextp's
// compute stream (non-blocking), and an event the thread sleeps on while the kernel runs (a
// blocking-sync event: waiting on the stream could spin a core, adding CPU contention too).
struct SpinQueue {
  int device = -1;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
};

SpinQueue& spin_queue(int device) {
  thread_local SpinQueue q;
  if (q.device != device) {
    FLEXTP_CUDA_CHECK(cudaStreamCreateWithFlags(&q.stream, cudaStreamNonBlocking));
    FLEXTP_CUDA_CHECK(cudaEventCreateWithFlags(&q.done, cudaEventBlockingSync | cudaEventDisableTiming));
    q.device = device;
  }
  return q;
}

}  // namespace

void spin(int device, double ms) {
  FLEXTP_CUDA_CHECK(cudaSetDevice(device));
  int sms = 0, threads_per_sm = 0;
  FLEXTP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FLEXTP_CUDA_CHECK(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  int blocks = sms * (threads_per_sm / kSpinThreads);  // every thread slot of every SM
  SpinQueue& q = spin_queue(device);
  spin_kernel<<<blocks, kSpinThreads, 0, q.stream>>>(static_cast<uint64_t>(ms * 1e6));
  FLEXTP_CUDA_CHECK(cudaGetLastError());
  FLEXTP_CUDA_CHECK(cudaEventRecord(q.done, q.stream));
  FLEXTP_CUDA_CHECK(cudaEventSynchronize(q.done));
}

}  // namespace flextp::cuda

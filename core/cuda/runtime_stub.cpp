// Used when flextp is built without CUDA: every GPU request fails with a message saying why.
#include "core/cuda/cuda_runtime_api.h"
#include "core/cuda/cudnn_attention.h"
#include "core/error.h"

namespace flextp::cuda {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  FLEXTP_FAIL(what, ": this flextp build has no CUDA backend; rebuild with CUDA found "
              "(cmake -DFLEXTP_CUDA=ON, nvcc on PATH or at /usr/local/cuda)");
}
}  // namespace

int device_count() { return 0; }
std::string device_name(int) { no_cuda("naming a CUDA device"); }
void use_device(int) { no_cuda("selecting a CUDA device"); }
std::string attention_path() { return "own kernels (no CUDA backend in this build)"; }
void* raw_malloc(int, size_t) { no_cuda("cuda allocation"); }
void raw_free(int, void*) { no_cuda("cuda free"); }
void memcpy(void*, bool, const void*, bool, size_t) { no_cuda("cuda copy"); }
void synchronize() {}
void fill(void*, size_t, DType, double) { no_cuda("cuda fill"); }
void spin(int, double) { no_cuda("a busy kernel on a GPU"); }

std::string cudnn_attention_describe(bool, const AttentionLayout&) {
  return "unavailable: this flextp build has no CUDA backend";
}

}  // namespace flextp::cuda

#pragma once
// The GPU-only test cases ("on the GPU, ..."): each starts with `if (test::skip_without_gpu()) return;`.
// They run in their own ctest entry, gpu_cases, which ctest reports as Skipped when the line
// printed here appears: a hidden doctest MESSAGE would let a GPU-less run look like a GPU-tested one.
#include <doctest/doctest.h>

#include <cstdio>

#include "core/cuda/cuda_runtime_api.h"

namespace flextp::test {

inline bool skip_without_gpu() {
  if (cuda_compiled() && cuda::device_count() > 0) return false;
  const char* why = cuda_compiled() ? "no GPU visible" : "built without CUDA";
  std::printf("GPU cases skipped (%s): %s\n", why, doctest::getContextOptions()->currentTest->m_name);
  std::fflush(stdout);
  return true;
}

// Part of a GPU case that cannot run here (no mpirun, say): said on the same line, so that no
// run reads it as passed.
inline void report_gpu_skip(const char* why, const char* what) {
  std::printf("GPU cases skipped (%s): %s\n", why, what);
  std::fflush(stdout);
}

}  // namespace flextp::test

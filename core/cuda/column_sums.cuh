#pragma once
// Column sums of a [rows, cols] matrix given by a functor value(r, j), deterministic and parallel
// over both dimensions: each chunk of rows sums its columns into a partial row, then the partial
// rows are added. Bias gradients and LayerNorm's weight gradients are such sums over all tokens.
#include "core/cuda/launch.h"
#include "core/cuda/indexing.h"
#include "core/tensor.h"

namespace flextp::cuda {

template <typename T, typename F>
__global__ void column_partials_kernel(F value, size_t rows, size_t cols, size_t rows_per_chunk,
                                       T* partial) {
  size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (j >= cols) return;
  size_t lo = blockIdx.y * rows_per_chunk, hi = min(rows, lo + rows_per_chunk);
  T s = 0;
  for (size_t r = lo; r < hi; ++r) s += value(r, j);
  partial[blockIdx.y * cols + j] = s;
}

template <typename T>
struct MatrixEntry {
  const T* x;
  size_t cols;
  __device__ T operator()(size_t r, size_t j) const { return x[r * cols + j]; }
};

// out[j] = sum over r of value(r, j). Scratch comes from the caching allocator of `device`.
template <typename T, typename F>
void column_sums(F value, size_t rows, size_t cols, T* out, Device device, const char* op) {
  if (cols == 0) return;
  auto [chunks, per] = row_chunks(rows);
  dim3 grid(grid_for(cols), static_cast<unsigned>(chunks));
  if (chunks == 1) {
    column_partials_kernel<T><<<grid, kBlock, 0, stream()>>>(value, rows, cols, per, out);
    FLEXTP_CUDA_LAUNCHED(op);
    return;
  }
  Tensor partial = Tensor::empty({static_cast<int64_t>(chunks * cols)}, dtype_of<T>::value, device);
  column_partials_kernel<T><<<grid, kBlock, 0, stream()>>>(value, rows, cols, per, partial.data<T>());
  FLEXTP_CUDA_LAUNCHED(op);
  dim3 grid2(grid_for(cols), 1);
  column_partials_kernel<T><<<grid2, kBlock, 0, stream()>>>(MatrixEntry<T>{partial.data<T>(), cols},
                                                            chunks, cols, chunks, out);
  FLEXTP_CUDA_LAUNCHED(op);
}

}  // namespace flextp::cuda

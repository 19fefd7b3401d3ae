// GPU kernels of core/ops/sharded_cross_entropy.h: one block per row of logits (the op has
// checked and counted the targets).
#include "core/cuda/launch.h"
#include "core/ops/sharded_cross_entropy.h"

namespace flextp::cuda {
namespace {

// The sharded passes visit only the runs of real-vocabulary columns ([begin, end) pairs).
template <typename T>
__global__ void sharded_max_kernel(const T* logits, const int32_t* runs, int64_t nruns, int64_t v, T* out) {
  const T* row = logits + blockIdx.x * static_cast<size_t>(v);
  T m = -INFINITY;
  for (int64_t r = 0; r < nruns; ++r)
    for (int64_t j = runs[2 * r] + threadIdx.x; j < runs[2 * r + 1]; j += blockDim.x) m = max(m, row[j]);
  m = block_max(m);
  if (threadIdx.x == 0) out[blockIdx.x] = m;
}

template <typename T>
__global__ void sharded_sums_kernel(const T* logits, const int32_t* runs, int64_t nruns, const T* row_max_in,
                                    const int32_t* target, int64_t v, T* sum_exp, T* target_logit) {
  const T* row = logits + blockIdx.x * static_cast<size_t>(v);
  T m = row_max_in[blockIdx.x], s = 0;
  for (int64_t r = 0; r < nruns; ++r)
    for (int64_t j = runs[2 * r] + threadIdx.x; j < runs[2 * r + 1]; j += blockDim.x) s += exp(row[j] - m);
  s = block_sum(s);
  if (threadIdx.x == 0) {
    sum_exp[blockIdx.x] = s;
    target_logit[blockIdx.x] = target[blockIdx.x] >= 0 ? row[target[blockIdx.x]] : T(0);
  }
}

// One thread per row: every rank's (max, sum of exp relative to it, target logit), combined in
// rank order in f64 as the CPU's sharded_ce_combine does.
template <typename T>
__global__ void sharded_combine_kernel(const T* gathered, int64_t ranks, int64_t n, T* row_max_out, T* sum_exp,
                                       T* target_logit) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  T m = -INFINITY;
  for (int64_t r = 0; r < ranks; ++r) m = max(m, gathered[3 * r * n + i]);
  double s = 0, t = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    T mr = gathered[3 * r * n + i];
    if (mr != T(-INFINITY))
      s += static_cast<double>(gathered[(3 * r + 1) * n + i]) * exp(static_cast<double>(mr) - static_cast<double>(m));
    t += static_cast<double>(gathered[(3 * r + 2) * n + i]);
  }
  row_max_out[i] = m;
  sum_exp[i] = static_cast<T>(s);
  target_logit[i] = static_cast<T>(t);
}

// One block: lse per row and the mean loss over the counted rows, summed in f64, on the device.
template <typename T>
__global__ void sharded_loss_kernel(const T* row_max_in, const T* sum_exp, const T* target_logit,
                                    const T* counted, int64_t n, int64_t count, T* lse, T* loss) {
  double total = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    double l = static_cast<double>(row_max_in[i]) + log(static_cast<double>(sum_exp[i]));
    lse[i] = static_cast<T>(l);
    if (counted[i] != T(0)) total += l - static_cast<double>(target_logit[i]);
  }
  total = block_sum(total);
  if (threadIdx.x == 0) loss[0] = static_cast<T>(count ? total / static_cast<double>(count) : 0.0);
}

// d[i, j] = s_i (exp(x[i, j] - lse[i]) - [j == target_i]) on the runs and 0 between and after
// them (the padded columns), with s_i = counted_i * grad_loss / count read on the device.
template <typename T>
__global__ void sharded_backward_kernel(const T* logits, const int32_t* runs, int64_t nruns,
                                        const int32_t* target, const T* lse, const T* counted,
                                        const T* grad_loss, int64_t count, int64_t v, T* d) {
  size_t base = blockIdx.x * static_cast<size_t>(v);
  int32_t t = target[blockIdx.x];
  T s = count ? counted[blockIdx.x] * static_cast<T>(static_cast<double>(grad_loss[0]) / static_cast<double>(count))
              : T(0);
  T l = lse[blockIdx.x];
  int64_t done = 0;  // columns before `done` are written
  for (int64_t r = 0; r <= nruns; ++r) {
    int64_t b = r < nruns ? runs[2 * r] : v, e = r < nruns ? runs[2 * r + 1] : v;
    for (int64_t j = done + threadIdx.x; j < b; j += blockDim.x) d[base + j] = T(0);
    for (int64_t j = b + threadIdx.x; j < e; j += blockDim.x)
      d[base + j] = s == T(0) ? T(0) : s * (exp(logits[base + j] - l) - (j == t ? T(1) : T(0)));
    done = e;
  }
}

}  // namespace

void sharded_ce_row_max(const Tensor& logits, const Tensor& runs, Tensor& row_max_out) {
  int64_t n = logits.size(0), v = logits.size(1);
  if (n == 0) return;
  dispatch_float(logits.dtype(), "cross-entropy row max", [&](auto tag) {
    using T = decltype(tag);
    sharded_max_kernel<T><<<n, kBlock, 0, stream()>>>(logits.data<T>(), runs.data<int32_t>(), runs.size(0), v,
                                                      row_max_out.data<T>());
  });
  FLEXTP_CUDA_LAUNCHED("cross-entropy row max");
}

void sharded_ce_sums(const Tensor& logits, const Tensor& runs, const Tensor& row_max_in,
                     const Tensor& local_target, Tensor& sum_exp, Tensor& target_logit) {
  int64_t n = logits.size(0), v = logits.size(1);
  if (n == 0) return;
  dispatch_float(logits.dtype(), "cross-entropy sums", [&](auto tag) {
    using T = decltype(tag);
    sharded_sums_kernel<T><<<n, kBlock, 0, stream()>>>(logits.data<T>(), runs.data<int32_t>(), runs.size(0),
                                                       row_max_in.data<T>(), local_target.data<int32_t>(), v,
                                                       sum_exp.data<T>(), target_logit.data<T>());
  });
  FLEXTP_CUDA_LAUNCHED("cross-entropy sums");
}

void sharded_ce_combine(const Tensor& gathered, Tensor& row_max_out, Tensor& sum_exp, Tensor& target_logit) {
  int64_t n = row_max_out.size(0), ranks = gathered.size(0) / 3;
  if (n == 0) return;
  dispatch_float(gathered.dtype(), "cross-entropy combine", [&](auto tag) {
    using T = decltype(tag);
    constexpr int kThreads = 256;
    sharded_combine_kernel<T><<<(n + kThreads - 1) / kThreads, kThreads, 0, stream()>>>(
        gathered.data<T>(), ranks, n, row_max_out.data<T>(), sum_exp.data<T>(), target_logit.data<T>());
  });
  FLEXTP_CUDA_LAUNCHED("cross-entropy combine");
}

void sharded_ce_loss(const Tensor& row_max_in, const Tensor& sum_exp, const Tensor& target_logit,
                     const Tensor& counted, int64_t count, Tensor& lse, Tensor& loss) {
  int64_t n = row_max_in.size(0);
  dispatch_float(row_max_in.dtype(), "cross-entropy loss", [&](auto tag) {
    using T = decltype(tag);
    sharded_loss_kernel<T><<<1, kBlock, 0, stream()>>>(row_max_in.data<T>(), sum_exp.data<T>(),
                                                       target_logit.data<T>(), counted.data<T>(), n, count,
                                                       lse.data<T>(), loss.data<T>());
  });
  FLEXTP_CUDA_LAUNCHED("cross-entropy loss");
}

void sharded_ce_backward(const Tensor& logits, const Tensor& runs, const Tensor& local_target,
                         const Tensor& lse, const Tensor& counted, const Tensor& grad_loss,
                         int64_t count, Tensor& dlogits) {
  int64_t n = logits.size(0), v = logits.size(1), nruns = runs.size(0);
  if (n == 0 || v == 0) return;
  dispatch_float(logits.dtype(), "cross-entropy backward", [&](auto tag) {
    using T = decltype(tag);
    // A local target of -1 matches no column, so the one-hot term is dropped on this rank.
    sharded_backward_kernel<T><<<n, kBlock, 0, stream()>>>(logits.data<T>(), runs.data<int32_t>(), nruns,
                                                           local_target.data<int32_t>(), lse.data<T>(),
                                                           counted.data<T>(), grad_loss.data<T>(), count, v,
                                                           dlogits.data<T>());
  });
  FLEXTP_CUDA_LAUNCHED("cross-entropy backward");
}

}  // namespace flextp::cuda

#pragma once
// The gradient harness every op test uses: runs the op in double precision, backpropagates a
// random projection of its output, and compares every input gradient with central finite
// differences of the same projection. Double precision lets the tolerance be tight (1e-6).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "core/autograd.h"
#include "core/cuda/cuda_runtime_api.h"
#include "core/ops/elementwise.h"
#include "core/ops/reduce.h"
#include "core/tensor.h"

namespace flextp::test {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

inline double projected(const Tensor& out, const Tensor& weights) {
  std::vector<double> o = out.to_vector<double>(), w = weights.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < o.size(); ++i) s += o[i] * w[i];
  return s;
}

// Checks the gradient of every f64 input that requires grad, at up to max_entries entries each.
inline void check_gradients(const Fn& f, std::vector<Tensor> inputs, double tol = 1e-6,
                            double eps = 1e-6, int64_t max_entries = 200) {
  for (Tensor& t : inputs) t.zero_grad();
  Tensor out = f(inputs);
  REQUIRE(out.dtype() == DType::F64);
  Tensor weights = Tensor::randn(out.shape(), 1234, 99, 0, 1, DType::F64);
  sum(mul(out, weights)).backward();
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor x = inputs[k];
    if (!x.requires_grad()) continue;
    Tensor g = x.grad();
    REQUIRE_MESSAGE(g.defined(), "input ", k, " got no gradient");
    std::vector<double> analytic = g.to_vector<double>();
    double* px = x.data<double>();
    int64_t n = x.numel(), step = std::max<int64_t>(1, n / max_entries);
    for (int64_t i = 0; i < n; i += step) {
      double saved = px[i];
      double up, down;
      {
        NoGradGuard ng;
        px[i] = saved + eps;
        up = projected(f(inputs), weights);
        px[i] = saved - eps;
        down = projected(f(inputs), weights);
      }
      px[i] = saved;
      double numeric = (up - down) / (2 * eps);
      INFO("input ", k, " entry ", i, ": analytic ", analytic[i], " numeric ", numeric);
      CHECK(std::abs(analytic[i] - numeric) <= tol * (1 + std::abs(numeric)));
    }
  }
}

inline Tensor leaf(const Shape& shape, uint64_t seed, double std = 1.0) {
  Tensor t = Tensor::randn(shape, seed, 0, 0, std, DType::F64);
  t.set_requires_grad(true);
  return t;
}

inline void check_close(const Tensor& a, const Tensor& b, double tol) {
  REQUIRE(a.shape() == b.shape());
  Tensor a64 = a.dtype() == DType::F64 ? a : a.to(DType::F64);
  Tensor b64 = b.dtype() == DType::F64 ? b : b.to(DType::F64);
  std::vector<double> x = a64.to_vector<double>(), y = b64.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("entry ", i, ": ", x[i], " vs ", y[i]);
    CHECK(std::abs(x[i] - y[i]) <= tol * (1 + std::abs(y[i])));
  }
}

inline void check_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-6) {
  Tensor t64 = t.dtype() == DType::F64 ? t : t.to(DType::F64);
  std::vector<double> v = t64.to_vector<double>();
  REQUIRE(v.size() == expected.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("entry ", i);
    CHECK(v[i] == doctest::Approx(expected[i]).epsilon(tol));
  }
}

// The same f32 computation on the CPU and, when a GPU is present, on the GPU: values agree.
inline void check_on_gpu(const Fn& f, const std::vector<Tensor>& cpu_inputs, double tol = 1e-5) {
  if (!cuda_compiled() || cuda::device_count() == 0) {
    MESSAGE("no GPU here: the CUDA case of this op is skipped");
    return;
  }
  std::vector<Tensor> gpu_inputs;
  for (const Tensor& t : cpu_inputs) gpu_inputs.push_back(t.to(Device::cuda(0)));
  check_close(f(gpu_inputs).to(Device::cpu()), f(cpu_inputs), tol);
}

}  // namespace flextp::test

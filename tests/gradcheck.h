#pragma once
// The gradient harness every op test uses: runs the op in double precision, backpropagates a
// random projection of its output, and compares each input's gradient, at entries chosen at
// random, with central finite differences of the same projection. Double precision lets the
// tolerance be tight (GradCheck).
// One test source, two devices: every check runs on the CPU and again on the GPU when this build
// has CUDA and a GPU is visible (the CUDA kernels are templates over f32 and f64 too); without
// one the GPU pass is skipped with a message.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/cuda/cuda_runtime_api.h"
#include "core/ops/elementwise.h"
#include "core/ops/reduce.h"
#include "core/ops/shape_ops.h"
#include "core/tensor.h"

namespace flextp::test {

// Whether the GPU passes run; says once per test binary why not.
inline bool gpu_present() {
  static const bool present = cuda_compiled() && cuda::device_count() > 0;
  static bool told = false;
  if (!present && !told) {
    const char* why = cuda_compiled() ? "no GPU visible: the CUDA cases of the op tests are skipped"
                                      : "built without CUDA: the CUDA cases of the op tests are skipped";
    MESSAGE(std::string(why));
    told = true;
  }
  return present;
}

// The devices a two-device test runs on: the CPU, and cuda:0 when present.
inline std::vector<Device> devices() {
  std::vector<Device> d{Device::cpu()};
  if (gpu_present()) d.push_back(Device::cuda(0));
  return d;
}

// The same tensors on another device, leaves again where the originals require grad.
inline std::vector<Tensor> on_device(const std::vector<Tensor>& in, Device d) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    Tensor c = t.detach().to(d);
    if (c.same_storage(t)) c = t.detach().clone();
    if (t.requires_grad()) c.set_requires_grad(true);
    out.push_back(c);
  }
  return out;
}

// Entry i of an f64 tensor on any device (the finite differences poke one entry at a time).
inline void set_entry(const Tensor& x, int64_t i, double v) {
  if (x.device().is_cpu()) {
    x.data<double>()[i] = v;
    return;
  }
  NoGradGuard ng;
  slice_rows(view_as(x.detach(), {x.numel()}), i, 1).copy_from(Tensor::from_vector<double>({v}, {1}));
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

inline double projected(const Tensor& out, const Tensor& weights) {
  std::vector<double> o = out.to_vector<double>(), w = weights.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < o.size(); ++i) s += o[i] * w[i];
  return s;
}

// How a gradient check compares and what it samples. An entry passes when
// |analytic - numeric| <= atol + rtol |numeric|: relative for gradients of ordinary size, with an
// absolute floor far below any gradient a test means to check (q/k gradients of a model at
// initialisation are ~1e-5, so a 1% error there is ~1e-7, a hundred times atol).
struct GradCheck {
  double atol = 1e-9;
  double rtol = 1e-6;
  // The step of the central differences. Their error is about eps^2 |f'''| / 6 (truncation) plus
  // about 1e-16 |f| / eps (rounding): at 1e-5 the op tests' largest error is a fiftieth of what
  // they allow. A function that bends on a smaller scale s wants a smaller eps (the truncation
  // grows as (eps / s)^2; the whole GPT's check says why it takes 3e-6).
  double eps = 1e-5;
  int64_t max_entries = 200;  // per input, chosen at random; every entry of a smaller input
  uint64_t seed = 1;          // which entries
  // The largest |numeric| checked per input must exceed this, so that a check cannot pass by
  // comparing zeros with zeros...
  double tiny = 1e-7;
  // ...except for these inputs (indices), whose gradient must be zero (below `tiny` everywhere).
  std::vector<size_t> zero_inputs;
};

// Up to max_entries distinct entries of n, at random (seeded), in increasing order; all of them
// when n is not larger. A fixed stride would line up with row widths and check one column only.
inline std::vector<int64_t> entries_to_check(int64_t n, int64_t max_entries, uint64_t seed) {
  std::vector<int64_t> all(n);
  std::iota(all.begin(), all.end(), 0);
  if (n <= max_entries) return all;
  std::mt19937_64 rng(seed);
  for (int64_t j = 0; j < max_entries; ++j) std::swap(all[j], all[j + static_cast<int64_t>(rng() % (n - j))]);
  all.resize(max_entries);
  std::sort(all.begin(), all.end());
  return all;
}

// Checks the gradient of every f64 input that requires grad, at up to opts.max_entries entries
// each (each input its own random entries), on the inputs' device.
inline void check_gradients_here(const Fn& f, std::vector<Tensor> inputs, const GradCheck& opts = {}) {
  for (Tensor& t : inputs) t.zero_grad();
  Tensor out = f(inputs);
  REQUIRE(out.dtype() == DType::F64);
  Tensor weights = Tensor::randn(out.shape(), 1234, 99, 0, 1, DType::F64).to(out.device());
  sum(mul(out, weights)).backward();
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor x = inputs[k];
    if (!x.requires_grad()) continue;
    bool zero_expected = std::find(opts.zero_inputs.begin(), opts.zero_inputs.end(), k) != opts.zero_inputs.end();
    Tensor g = x.grad();
    REQUIRE_MESSAGE((g.defined() || zero_expected), "input ", k, " got no gradient");
    std::vector<double> values = x.to_vector<double>();
    std::vector<double> analytic = g.defined() ? g.to_vector<double>() : std::vector<double>(values.size(), 0.0);
    double largest = 0;
    for (int64_t i : entries_to_check(x.numel(), opts.max_entries, opts.seed * 1000003 + k)) {
      double saved = values[i];
      double up, down;
      {
        NoGradGuard ng;
        set_entry(x, i, saved + opts.eps);
        up = projected(f(inputs), weights);
        set_entry(x, i, saved - opts.eps);
        down = projected(f(inputs), weights);
      }
      set_entry(x, i, saved);
      double numeric = (up - down) / (2 * opts.eps);
      largest = std::max(largest, std::abs(numeric));
      INFO("on ", x.device().str(), ", input ", k, " entry ", i, ": analytic ", analytic[i], " numeric ", numeric);
      double err = std::abs(analytic[i] - numeric), allowed = opts.atol + opts.rtol * std::abs(numeric);
      CHECK(err <= allowed);
    }
    INFO("on ", x.device().str(), ", input ", k, ": the largest |gradient| checked is ", largest);
    if (zero_expected)
      CHECK(largest <= opts.tiny);
    else
      CHECK_MESSAGE(largest > opts.tiny, "the checked gradients are all tiny: the check compared (near) zeros");
  }
}

inline void check_gradients(const Fn& f, const std::vector<Tensor>& inputs, const GradCheck& opts = {}) {
  check_gradients_here(f, inputs, opts);
  if (gpu_present()) check_gradients_here(f, on_device(inputs, Device::cuda(0)), opts);
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

// The same computation on the CPU and, when a GPU is present, on the GPU: the outputs agree, and
// so do the gradients of the inputs that require grad (of a fixed random projection).
inline void check_on_gpu(const Fn& f, const std::vector<Tensor>& cpu_inputs, double tol = 1e-5) {
  if (!gpu_present()) return;
  auto run = [&](const std::vector<Tensor>& in, std::vector<Tensor>& grads) {
    for (Tensor t : in) t.zero_grad();
    Tensor out = f(in);
    if (out.requires_grad()) {
      Tensor w = Tensor::randn(out.shape(), 4321, 7, 0, 1, out.dtype()).to(out.device());
      sum(mul(out, w)).backward();
    }
    for (const Tensor& t : in) grads.push_back(t.requires_grad() ? t.grad() : Tensor());
    return out;
  };
  std::vector<Tensor> cpu_grads, gpu_grads;
  std::vector<Tensor> cpu_in = on_device(cpu_inputs, Device::cpu());
  Tensor expected = run(cpu_in, cpu_grads);
  Tensor got = run(on_device(cpu_inputs, Device::cuda(0)), gpu_grads);
  REQUIRE(got.is_cuda());
  INFO("GPU against CPU: output");
  check_close(got.to(Device::cpu()), expected, tol);
  for (size_t k = 0; k < cpu_grads.size(); ++k) {
    if (!cpu_grads[k].defined()) continue;
    INFO("GPU against CPU: gradient of input ", k);
    REQUIRE(gpu_grads[k].defined());
    check_close(gpu_grads[k].to(Device::cpu()), cpu_grads[k], tol);
  }
}

}  // namespace flextp::test

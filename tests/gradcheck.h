#pragma once
// The gradient harness every op test uses: runs the op in double precision, backpropagates a
// random projection of its output, and compares every input gradient with central finite
// differences of the same projection. Double precision lets the tolerance be tight (1e-6).
// One test source, two devices: every check runs on the CPU and again on the GPU when this build
// has CUDA and a GPU is visible (the CUDA kernels are templates over f32 and f64 too); without
// one the GPU pass is skipped with a message.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
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

// Checks the gradient of every f64 input that requires grad, at up to max_entries entries each,
// on the inputs' device.
inline void check_gradients_here(const Fn& f, std::vector<Tensor> inputs, double tol, double eps,
                                 int64_t max_entries) {
  for (Tensor& t : inputs) t.zero_grad();
  Tensor out = f(inputs);
  REQUIRE(out.dtype() == DType::F64);
  Tensor weights = Tensor::randn(out.shape(), 1234, 99, 0, 1, DType::F64).to(out.device());
  sum(mul(out, weights)).backward();
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor x = inputs[k];
    if (!x.requires_grad()) continue;
    Tensor g = x.grad();
    REQUIRE_MESSAGE(g.defined(), "input ", k, " got no gradient");
    std::vector<double> analytic = g.to_vector<double>(), values = x.to_vector<double>();
    int64_t n = x.numel(), step = std::max<int64_t>(1, n / max_entries);
    for (int64_t i = 0; i < n; i += step) {
      double saved = values[i];
      double up, down;
      {
        NoGradGuard ng;
        set_entry(x, i, saved + eps);
        up = projected(f(inputs), weights);
        set_entry(x, i, saved - eps);
        down = projected(f(inputs), weights);
      }
      set_entry(x, i, saved);
      double numeric = (up - down) / (2 * eps);
      INFO("on ", x.device().str(), ", input ", k, " entry ", i, ": analytic ", analytic[i], " numeric ", numeric);
      CHECK(std::abs(analytic[i] - numeric) <= tol * (1 + std::abs(numeric)));
    }
  }
}

inline void check_gradients(const Fn& f, const std::vector<Tensor>& inputs, double tol = 1e-6,
                            double eps = 1e-6, int64_t max_entries = 200) {
  check_gradients_here(f, inputs, tol, eps, max_entries);
  if (gpu_present()) check_gradients_here(f, on_device(inputs, Device::cuda(0)), tol, eps, max_entries);
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

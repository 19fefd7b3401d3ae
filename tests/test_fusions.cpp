// The fused ops (one pass where the model would take two): each one's gradient against finite
// differences; bias + GELU against its formula and in f32 against f64.
#include <doctest/doctest.h>

#include <cmath>

#include "core/ops/bias_gelu.h"
#include "core/ops/elementwise.h"
#include "tests/gradcheck.h"

using namespace flextp;
using test::check_gradients;
using test::leaf;
using In = std::vector<Tensor>;

namespace {

In to_dtype(const In& in, DType dtype) {
  In out;
  for (const Tensor& t : in) {
    Tensor c = t.detach().to(dtype);
    c.set_requires_grad(t.requires_grad());
    out.push_back(c);
  }
  return out;
}
In to_f32(const In& in) { return to_dtype(in, DType::F32); }

// Runs f on fresh copies of `inputs` in `dtype`, backpropagates a fixed random projection of its
// output, and returns the output followed by every input's gradient.
In output_and_grads(const test::Fn& f, const In& inputs, DType dtype = DType::F32) {
  In in = to_dtype(inputs, dtype);
  Tensor out = f(in);
  sum(mul(out, Tensor::randn(out.shape(), 77, 3, 0, 1, out.dtype()))).backward();
  In all{out.detach()};
  for (const Tensor& t : in) all.push_back(t.grad());
  return all;
}

}  // namespace

// ---------------------------------------------------------------- bias + GELU
TEST_CASE("bias_gelu: finite-difference gradient of x and bias, rows with a vector tail") {
  auto f = [](const In& in) { return bias_gelu(in[0], in[1]); };
  check_gradients(f, {leaf({3, 4, 19}, 1, 2.0), leaf({19}, 2)});
}

TEST_CASE("bias_gelu equals the tanh formula on x + bias, row by row with vector tails") {
  for (int64_t m : {37, 128}) {
    CAPTURE(m);
    Tensor x = leaf({5, m}, 3, 2.0), bias = leaf({m}, 4);
    std::vector<double> got = bias_gelu(x.to(DType::F32), bias.to(DType::F32)).to(DType::F64).to_vector<double>();
    std::vector<double> xs = x.to_vector<double>(), bs = bias.to_vector<double>();
    for (size_t i = 0; i < xs.size(); ++i) {
      double v = xs[i] + bs[i % m];
      double want = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
      CHECK(got[i] == doctest::Approx(want).epsilon(1e-5));
    }
  }
  // f32 (vectorised rows, Eigen's tanh) against f64, values and both gradients.
  auto f = [](const In& in) { return bias_gelu(in[0], in[1]); };
  In inputs{leaf({6, 130}, 5, 2.0), leaf({130}, 6)};
  In a = output_and_grads(f, inputs), b = output_and_grads(f, inputs, DType::F64);
  for (size_t k = 0; k < a.size(); ++k) test::check_close(a[k], b[k].to(DType::F32), 1e-5);
  test::check_on_gpu(f, to_f32({leaf({7, 300}, 7), leaf({300}, 8)}));
  CHECK_THROWS_WITH_AS(bias_gelu(Tensor::zeros({2, 4}), Tensor::zeros({3})),
                       doctest::Contains("needs a bias of shape [4]"), Error);
}

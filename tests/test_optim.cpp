// Optimizers, schedule and clipping against hand computations.
#include <doctest/doctest.h>

#include <cmath>

#include "core/error.h"
#include "optim/clip.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "core/ops/elementwise.h"
#include "core/ops/reduce.h"
#include "core/ops/shape_ops.h"
#include "tests/gradcheck.h"

using namespace flextp;

namespace {
Parameter param(std::vector<double> value, std::vector<double> grad, bool decay = true,
                Device device = Device::cpu()) {
  Parameter p;
  p.name = "p";
  p.value = Tensor::from_vector(value, {static_cast<int64_t>(value.size())}, device);
  p.value.set_requires_grad(true);
  p.value.set_grad(Tensor::from_vector(grad, {static_cast<int64_t>(grad.size())}, device));
  p.weight_decay = decay;
  return p;
}
}  // namespace

TEST_CASE("AdamW: two steps by hand, decoupled decay only where enabled") {
  for (Device d : test::devices()) {
  INFO("on ", d.str());
  Parameter p = param({1.0, -2.0}, {0.5, -0.1}, true, d), q = param({1.0}, {0.5}, false, d);
  AdamW opt({0.9, 0.999, 1e-8, 0.1});
  double lr = 0.01;
  opt.step({&p, &q}, lr);
  // Step 1: m = 0.1 g, v = 0.001 g^2; corrected m/sqrt(v) = sign(g).
  double p0 = 1.0 - lr * (0.5 / (0.5 + 1e-8) + 0.1 * 1.0);
  double p1 = -2.0 - lr * (-0.1 / (0.1 + 1e-8) + 0.1 * -2.0);
  test::check_values(p.value, {p0, p1}, 1e-12);
  test::check_values(q.value, {1.0 - lr * (0.5 / (0.5 + 1e-8))}, 1e-12);
  test::check_values(p.state["m"], {0.05, -0.01}, 1e-12);
  test::check_values(p.state["v"], {0.001 * 0.25, 0.001 * 0.01}, 1e-12);
  opt.step({&p, &q}, lr);
  double m = 0.9 * 0.05 + 0.1 * 0.5, v = 0.999 * 0.00025 + 0.001 * 0.25;
  double mh = m / (1 - 0.81), vh = v / (1 - 0.999 * 0.999);
  test::check_values(slice_rows(p.value, 0, 1), {p0 - lr * (mh / (std::sqrt(vh) + 1e-8) + 0.1 * p0)},
                     1e-12);
  CHECK(opt.steps_taken() == 2);
  }
}

TEST_CASE("SGD with momentum") {
  for (Device d : test::devices()) {
  INFO("on ", d.str());
  Parameter p = param({1.0}, {2.0}, true, d);
  SGD opt({0.9, 0.0});
  opt.step({&p}, 0.1);  // buf = 2, p = 1 - 0.2
  test::check_values(p.value, {0.8}, 1e-12);
  opt.step({&p}, 0.1);  // buf = 0.9 * 2 + 2 = 3.8, p = 0.8 - 0.38
  test::check_values(p.value, {0.42}, 1e-12);
  }
}

TEST_CASE("cosine schedule with linear warm-up") {
  CosineSchedule s{1.0, 0.1, 10, 110};
  CHECK(s.at(0) == doctest::Approx(0.1));
  CHECK(s.at(9) == doctest::Approx(1.0));
  CHECK(s.at(10) == doctest::Approx(1.0));
  CHECK(s.at(60) == doctest::Approx(0.55));
  CHECK(s.at(110) == doctest::Approx(0.1));
  CHECK(s.at(500) == doctest::Approx(0.1));
}

TEST_CASE("global gradient-norm clipping") {
  for (Device d : test::devices()) {
  INFO("on ", d.str());
  Parameter a = param({0, 0}, {3, 0}, true, d), b = param({0}, {4}, true, d);
  // As the trainer does it: this rank's squares, the norm of every rank's (one here), the scaling.
  const double norm = norm_of({grad_squares({&a, &b})});
  CHECK(norm == doctest::Approx(5));
  clip_to_norm({&a, &b}, 10, norm);
  test::check_values(a.grad(), {3, 0});
  clip_to_norm({&a, &b}, 1, norm);
  test::check_values(a.grad(), {0.6, 0}, 1e-5);
  test::check_values(b.grad(), {0.8}, 1e-5);
  }
}

TEST_CASE("the global norm sums the split parameters' squares over ranks and takes the replicated ones once") {
  CHECK(norm_of({{1, 4}, {3, 4}, {8, 4}}) == doctest::Approx(std::sqrt(1 + 3 + 8 + 4.0)));
  CHECK_THROWS_WITH_AS(norm_of({}), doctest::Contains("at least one rank"), Error);
}

TEST_CASE("the gradient norm's one pass gives the bits of sum(mul(g, g)); clipping in place those of scale()") {
  // Sizes around Eigen's vector widths and unrolling, and one much bigger than any of them.
  for (int64_t n : {1, 7, 16, 33, 1000, 100003}) {
    INFO("n = ", n);
    for (DType dtype : {DType::F32, DType::F64}) {
      Tensor g = Tensor::randn({n}, 11, 0, 0, 1, dtype);
      CHECK(sum_squares(g).item() == sum(mul(g, g)).item());
    }
    // Squares of very different sizes: summed in float (not double) the small ones would be lost.
    std::vector<float> mixed(n);
    for (int64_t i = 0; i < n; ++i) mixed[i] = i % 3 ? 0.125f : 1024.f + static_cast<float>(i % 7);
    Tensor m = Tensor::from_vector(mixed, {n});
    CHECK(sum_squares(m).item() == sum(mul(m, m)).item());
    Parameter p;
    p.value = Tensor::zeros({n});
    p.value.set_requires_grad(true);
    p.value.set_grad(Tensor::randn({n}, 12, 0, 0, 3));
    const double norm = std::sqrt(grad_squares({&p}).replicated), limit = norm / 4;
    Tensor want = scale(p.grad(), limit / (norm + 1e-6));
    const void* where = p.grad().raw();
    clip_to_norm({&p}, limit, norm);
    CHECK(p.grad().raw() == where);  // in place
    CHECK(p.grad().to_vector<float>() == want.to_vector<float>());
  }
}

// The autograd engine: accumulation, no-grad, freed graphs, non-scalar roots, deep graphs,
// gradients kept instead of copied when no one else holds them.
#include <doctest/doctest.h>

#include "core/autograd.h"
#include "core/ops/elementwise.h"
#include "core/ops/reduce.h"
#include "core/ops/shape_ops.h"
#include "tests/gradcheck.h"

using namespace flextp;

TEST_CASE("a tensor used twice gets the sum of both gradients") {
  Tensor x = Tensor::from_vector<double>({1, 2, 3}, {3});
  x.set_requires_grad(true);
  sum(add(mul(x, x), scale(x, 3))).backward();  // d/dx (x^2 + 3x) = 2x + 3
  test::check_values(x.grad(), {5, 7, 9});
}

TEST_CASE("leaf gradients accumulate across backward calls until zero_grad") {
  Tensor x = Tensor::from_vector<double>({1, 2}, {2});
  x.set_requires_grad(true);
  sum(scale(x, 2)).backward();
  sum(scale(x, 2)).backward();
  test::check_values(x.grad(), {4, 4});
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("no-grad records nothing") {
  Tensor x = Tensor::ones({2});
  x.set_requires_grad(true);
  {
    NoGradGuard guard;
    CHECK_FALSE(grad_enabled());
    Tensor y = scale(x, 2);
    CHECK(y.grad_fn() == nullptr);
    CHECK_FALSE(y.requires_grad());
  }
  CHECK(grad_enabled());
  CHECK(scale(x, 2).grad_fn() != nullptr);
  CHECK(scale(Tensor::ones({2}), 2).grad_fn() == nullptr);  // no input needs a gradient
}

TEST_CASE("backward errors: freed graph, non-scalar root, nothing to differentiate") {
  Tensor x = Tensor::ones({3});
  x.set_requires_grad(true);
  Tensor loss = sum(scale(x, 2));
  loss.backward();
  CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("already freed"), Error);

  Tensor y = scale(x, 2);
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("non-scalar tensor f32[3]"), Error);
  // An explicit gradient is fine, and it is the one propagated (not ones in its place).
  x.zero_grad();
  y.backward(Tensor::from_vector<float>({1, 2, 3}, {3}));
  test::check_values(x.grad(), {2, 4, 6});
  CHECK_THROWS_WITH_AS(scale(x, 2).backward(Tensor::ones({2})), doctest::Contains("does not match"),
                       Error);
  CHECK_THROWS_WITH_AS(sum(Tensor::ones({3})).backward(),
                       doctest::Contains("does not require grad"), Error);
  CHECK_THROWS_WITH_AS(scale(x, 2).set_requires_grad(false), doctest::Contains("leaf"), Error);
  CHECK_THROWS_WITH_AS(Tensor::ones({2}, DType::I32).set_requires_grad(true),
                       doctest::Contains("floating-point"), Error);
}

TEST_CASE("deep graphs neither overflow the stack in backward nor when dropped") {
  const int depth = 200000;
  Tensor x = Tensor::ones({1}, DType::F64);
  x.set_requires_grad(true);
  Tensor y = x;
  for (int i = 0; i < depth; ++i) y = scale(y, 1.0);
  y.backward();
  test::check_values(x.grad(), {1});
  Tensor z = scale(x, 1.0);
  std::weak_ptr<Node> deepest = z.grad_fn();
  for (int i = 1; i < depth; ++i) z = scale(z, 1.0);
  CHECK_FALSE(deepest.expired());  // the chain holds it
  z = Tensor();                    // drop a whole unused graph
  CHECK(deepest.expired());        // every node of it is freed, down to the deepest
  test::check_values(x.grad(), {1});  // and dropping it ran nothing into the leaf
}

TEST_CASE("intermediate activations are freed once backward has run") {
  Tensor x = Tensor::randn({64, 64}, 1);
  x.set_requires_grad(true);
  Tensor loss;
  std::weak_ptr<Storage> hidden;
  {
    Tensor h = mul(x, x);
    hidden = h.impl_ptr()->storage;
    loss = sum(mul(h, h));  // the second mul saves h for its backward
  }
  CHECK_FALSE(hidden.expired());
  loss.backward();
  CHECK(hidden.expired());
}

namespace {
// An identity op that logs its backward's run.
Tensor logged(const char* name, const Tensor& in, std::vector<std::string>& log) {
  Tensor out = in.detach().clone();
  record(name, out, {in}, [&log, name](const Tensor& g, const std::vector<bool>&) {
    log.push_back(name);
    return std::vector<Tensor>{g};
  });
  return out;
}
}  // namespace

TEST_CASE("backward runs the latest created ready node first: chains created interleaved run interleaved") {
  Tensor x = Tensor::from_vector<double>({1, 2}, {2});
  x.set_requires_grad(true);
  std::vector<std::string> log;
  Tensor a1 = logged("a1", x, log), b1 = logged("b1", x, log);
  Tensor a2 = logged("a2", a1, log), b2 = logged("b2", b1, log);
  sum(add(a2, b2)).backward();
  // A depth-first order would run one chain to its end first (b2 b1 a2 a1).
  CHECK(log == std::vector<std::string>{"b2", "a2", "b1", "a1"});
  test::check_values(x.grad(), {2, 2});
}

namespace {
// An identity op whose backward returns what `make` makes of the incoming gradient, and notes
// where the incoming gradient and the returned one live.
struct Seen {
  const void* incoming = nullptr;
  const void* returned = nullptr;
};
Tensor through(const Tensor& in, Seen& seen, std::function<Tensor(const Tensor&)> make) {
  Tensor out = in.detach().clone();
  record("through", out, {in}, [&seen, make](const Tensor& g, const std::vector<bool>&) {
    Tensor r = make(g);
    seen.incoming = g.raw(), seen.returned = r.raw();
    return std::vector<Tensor>{r};
  });
  return out;
}
Tensor fresh_twos(const Tensor& g) { return Tensor::full(g.shape(), 2.0, g.dtype()); }
}  // namespace

TEST_CASE("a gradient no one else holds becomes the leaf's gradient without a copy; a held one is copied") {
  Tensor x = Tensor::ones({3});
  x.set_requires_grad(true);
  Seen seen;
  sum(through(x, seen, fresh_twos)).backward();
  CHECK(x.grad().raw() == seen.returned);  // kept, not copied
  test::check_values(x.grad(), {2, 2, 2});
  sum(through(x, seen, fresh_twos)).backward();  // accumulates into the kept one
  test::check_values(x.grad(), {4, 4, 4});

  Tensor y = Tensor::ones({3});
  y.set_requires_grad(true);
  Tensor held;  // the op keeps a handle of what it returns: the leaf must get a copy
  sum(through(y, seen, [&held](const Tensor& g) { return held = fresh_twos(g); })).backward();
  CHECK(y.grad().raw() != held.raw());
  held.fill_(5);
  test::check_values(y.grad(), {2, 2, 2});
  // A view of a bigger block (its other rows may be in use) is copied too.
  Tensor z = Tensor::ones({1, 3});
  z.set_requires_grad(true);
  sum(through(z, seen, [](const Tensor&) { return slice_rows(Tensor::full({2, 3}, 2.0), 1, 1); })).backward();
  CHECK(z.grad().raw() != seen.returned);
  test::check_values(z.grad(), {2, 2, 2});
}

TEST_CASE("a node's gradients are summed into the first one when no one else holds it, else into a copy") {
  Tensor x = Tensor::ones({3});
  x.set_requires_grad(true);
  Seen at_a, first, second;
  Tensor a = through(x, at_a, [](const Tensor& g) { return g; });
  Tensor c = through(a, second, fresh_twos);  // created first: runs second
  Tensor b = through(a, first, fresh_twos);
  add(sum(b), sum(c)).backward();
  CHECK(at_a.incoming == first.returned);  // summed in place
  test::check_values(x.grad(), {4, 4, 4});

  Tensor y = Tensor::ones({3});
  y.set_requires_grad(true);
  Tensor held;
  Tensor ya = through(y, at_a, [](const Tensor& g) { return g; });
  Tensor yc = through(ya, second, fresh_twos);
  Tensor yb = through(ya, first, [&held](const Tensor& g) { return held = fresh_twos(g); });
  add(sum(yb), sum(yc)).backward();
  CHECK(at_a.incoming != held.raw());
  test::check_values(held, {2, 2, 2});  // the op's own tensor is untouched
  test::check_values(y.grad(), {4, 4, 4});
}

// The packed GEMM (AVX-512 12 x 32 tiles where the build has AVX-512, AVX2 6 x 16 otherwise, 256-deep
// panels) against a plain triple loop in double, for every transpose and for shapes that are not
// multiples of its blocks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu/sgemm.h"
#include "core/random.h"

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace flextp;

namespace {

struct Product {
  int64_t m, n, k;
  bool ta, tb, acc;
  std::vector<float> a, b, c0;
  // A, B and C's first values drawn from random streams `stream`, `stream` + 1 and + 2.
  Product(int64_t m_, int64_t n_, int64_t k_, bool ta_, bool tb_, bool acc_, uint64_t stream = 11)
      : m(m_), n(n_), k(k_), ta(ta_), tb(tb_), acc(acc_), a(m_ * k_), b(k_ * n_), c0(m_ * n_) {
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(rng::normal(i, stream, 1));
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(rng::normal(i, stream + 1, 1));
    for (size_t i = 0; i < c0.size(); ++i) c0[i] = static_cast<float>(rng::normal(i, stream + 2, 1));
  }
  std::vector<float> run() const {
    std::vector<float> c = c0;
    cpu::sgemm(ta, tb, m, n, k, a.data(), ta ? m : k, b.data(), tb ? k : n, c.data(), n, acc);
    return c;
  }
  // The largest error against a double-precision triple loop, relative to sqrt(k).
  double worst_error(const std::vector<float>& c) const {
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double ref = acc ? c0[i * n + j] : 0.0;
        for (int64_t p = 0; p < k; ++p)
          ref += double(ta ? a[p * m + i] : a[i * k + p]) * double(tb ? b[j * k + p] : b[p * n + j]);
        worst = std::max(worst, std::abs(ref - c[i * n + j]) / (1 + std::sqrt(double(k))));
      }
    return worst;
  }
};

int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void set_threads(int t) {
#ifdef _OPENMP
  omp_set_num_threads(t);
#else
  (void)t;
#endif
}

}  // namespace

TEST_CASE("packed sgemm equals a reference product, any shape and transpose, = and +=") {
  if (!cpu::sgemm_available()) {
    MESSAGE("no AVX2 + FMA in this build: the Eigen path is used and tested by test_ops");
    return;
  }
  struct Case { int64_t m, n, k; };
  for (Case cs : {Case{1, 1, 1}, Case{6, 16, 256}, Case{7, 17, 257}, Case{73, 50, 600}, Case{150, 4100, 20}, Case{5, 3, 0}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (bool acc : {false, true}) {
          INFO("m ", cs.m, " n ", cs.n, " k ", cs.k, " ta ", ta, " tb ", tb, " acc ", acc);
          Product pr(cs.m, cs.n, cs.k, ta, tb, acc, 1);
          CHECK(pr.worst_error(pr.run()) < 1e-5);
        }
}


// Each thread packs and computes its own rectangle of C: short and wide products split their
// columns, tall ones their rows, and every thread count gives the same bits (each element's sum
// is cut at the same K slices whoever computes it). The shapes cross every block edge: several
// NC column blocks with a partial panel (1100 = 34 * 32 + 12), several KC slices (600), several
// MC row blocks with a partial tile (700), and a row count below one tile per thread (5).
TEST_CASE("packed sgemm splits work over 1, 2 and 3 threads with the same bits as the reference") {
  if (!cpu::sgemm_available()) return;
  struct Case { int64_t m, n, k; };
  const int saved = max_threads();
  for (Case cs : {Case{20, 1100, 600}, Case{700, 40, 300}, Case{5, 2000, 257}, Case{256, 768, 256}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const bool acc = ta != tb;
        INFO("m ", cs.m, " n ", cs.n, " k ", cs.k, " ta ", ta, " tb ", tb, " acc ", acc);
        Product pr(cs.m, cs.n, cs.k, ta, tb, acc);
        set_threads(1);
        const std::vector<float> one = pr.run();
        CHECK(pr.worst_error(one) < 1e-5);
        for (int t : {2, 3}) {
          INFO("threads ", t);
          set_threads(t);
          CHECK(pr.run() == one);
        }
      }
  set_threads(saved);
}

// Inside an outer parallel region (the batched products of core/cpu/matmul.cpp) the region of the
// call runs one thread: the split must be made for that one, or rows or columns are never written.
TEST_CASE("packed sgemm inside a parallel region computes the whole product") {
  if (!cpu::sgemm_available()) return;
  Product pr(64, 1100, 300, false, true, false);
  const std::vector<float> outside = pr.run();
  std::vector<std::vector<float>> inside(4);
#pragma omp parallel for num_threads(2) schedule(static)
  for (int s = 0; s < 4; ++s) inside[s] = pr.run();
  for (int s = 0; s < 4; ++s) CHECK(inside[s] == outside);
  CHECK(pr.worst_error(outside) < 1e-5);
}

// The packed GEMM (AVX-512 12 x 32 tiles where the build has AVX-512, AVX2 6 x 16 otherwise, 256-deep
// panels) against a plain triple loop in double, for every transpose and for shapes that are not
// multiples of its blocks.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/cpu/sgemm.h"
#include "core/random.h"

using namespace flextp;

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
          std::vector<float> a(cs.m * cs.k), b(cs.k * cs.n), c(cs.m * cs.n), c0(cs.m * cs.n);
          for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(rng::normal(i, 1, 1));
          for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(rng::normal(i, 2, 1));
          for (size_t i = 0; i < c.size(); ++i) c[i] = c0[i] = static_cast<float>(rng::normal(i, 3, 1));
          cpu::sgemm(ta, tb, cs.m, cs.n, cs.k, a.data(), ta ? cs.m : cs.k, b.data(), tb ? cs.k : cs.n, c.data(), cs.n, acc);
          double worst = 0;
          for (int64_t i = 0; i < cs.m; ++i)
            for (int64_t j = 0; j < cs.n; ++j) {
              double ref = acc ? c0[i * cs.n + j] : 0.0;
              for (int64_t p = 0; p < cs.k; ++p)
                ref += double(ta ? a[p * cs.m + i] : a[i * cs.k + p]) * double(tb ? b[j * cs.k + p] : b[p * cs.n + j]);
              worst = std::max(worst, std::abs(ref - c[i * cs.n + j]) / (1 + std::sqrt(double(cs.k))));
            }
          CHECK(worst < 1e-5);
        }
}

// The vocabulary-parallel embedding and cross-entropy (parallel/tp/vocab_parallel.h), which the model
// uses instead of the plain ops, on one process: values against the plain embedding and a loss by hand,
// finite-difference gradients (f64) with a permuted unit layout whose short last unit sits first,
// and ignored targets. tests/mpi/test_vocab_parallel.cpp runs them over several ranks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/ops/embedding.h"
#include "core/ops/matmul.h"
#include "core/ops/shape_ops.h"
#include "parallel/tp/vocab_parallel.h"
#include "tests/gradcheck.h"
#include "tests/vocab_cases.h"

using namespace flextp;
using In = std::vector<Tensor>;

namespace {
// 11 ids in units of 4: unit 2 (ids 8-10) is short. Every unit, held in the order 2, 0, 1.
constexpr int64_t kVocab = 11, kUnitRows = 4;
VocabLayout permuted() { return VocabLayout({2, 0, 1}, kUnitRows, kVocab); }

Tensor i32(std::vector<int32_t> v, Shape s) { return Tensor::from_vector<int32_t>(v, s); }

// The mean over rows whose target is not `ignore` of logsumexp(row) - row[target], in f64 by hand.
double reference_loss(const Tensor& all, const std::vector<int32_t>& targets, int32_t ignore) {
  std::vector<double> x = all.to_vector<double>();
  int64_t v = all.size(1);
  double total = 0;
  int counted = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] == ignore) continue;
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < v; ++j) m = std::max(m, x[i * v + j]);
    for (int64_t j = 0; j < v; ++j) s += std::exp(x[i * v + j] - m);
    total += m + std::log(s) - x[i * v + targets[i]];
    ++counted;
  }
  return counted ? total / counted : 0.0;
}
}  // namespace

TEST_CASE("vocab-parallel cross-entropy: permuted units, a short unit, ignored targets: values and FD gradient") {
  VocabLayout layout = permuted();
  REQUIRE(layout.global_ids() == std::vector<int64_t>{8, 9, 10, 0, 1, 2, 3, 4, 5, 6, 7});
  Tensor all = Tensor::randn({6, kVocab}, 1, 0, 0, 3.0, DType::F64);  // [N, V], vocabulary order
  // Targets in the short unit, at both ends of the others, and two ignored rows.
  std::vector<int32_t> tg{10, -100, 0, 7, -100, 8};
  Tensor targets = i32(tg, {6});
  Tensor local = test::local_columns(all, layout);  // [N, V] in local order (every unit is held)
  double loss = vocab_parallel_cross_entropy(local, targets, layout, nullptr).item();
  CHECK(loss == doctest::Approx(reference_loss(all, tg, -100)).epsilon(1e-12));  // mean over 4 rows

  auto ce = [&](const In& in) { return vocab_parallel_cross_entropy(in[0], targets, layout, nullptr); };
  test::check_gradients(ce, {test::leaf_of(local)});

  // Ignored rows contribute nothing: no gradient, and their logits do not move the loss.
  Tensor x = test::leaf_of(local);
  ce({x}).backward();
  std::vector<double> g = x.grad().to_vector<double>();
  for (int64_t row : {1, 4})
    for (int64_t j = 0; j < kVocab; ++j) {
      INFO("row ", row, " column ", j);
      CHECK(g[row * kVocab + j] == 0.0);
    }
  std::vector<double> moved = local.to_vector<double>();
  for (int64_t row : {1, 4})
    for (int64_t j = 0; j < kVocab; ++j) moved[row * kVocab + j] += 5.0 * (j + 1);
  CHECK(vocab_parallel_cross_entropy(Tensor::from_vector(moved, {6, kVocab}), targets, layout, nullptr).item() ==
        loss);
}

TEST_CASE("vocab-parallel cross-entropy: another ignore index, and nothing counted") {
  VocabLayout layout = permuted();
  Tensor all = Tensor::randn({4, kVocab}, 2, 0, 0, 2.0, DType::F64);
  Tensor local = test::local_columns(all, layout);
  // -1 is ignored; -100 would now be out of range.
  std::vector<int32_t> tg{-1, 9, 3, -1};
  Tensor targets = i32(tg, {4});
  CHECK(vocab_parallel_cross_entropy(local, targets, layout, nullptr, -1).item() ==
        doctest::Approx(reference_loss(all, tg, -1)).epsilon(1e-12));
  test::check_gradients(
      [&](const In& in) { return vocab_parallel_cross_entropy(in[0], targets, layout, nullptr, -1); },
      {test::leaf_of(local)});
  CHECK_THROWS_WITH_AS(vocab_parallel_cross_entropy(local, i32({-1, 9, -100, 0}, {4}), layout, nullptr, -1),
                       doctest::Contains("target -100 of row 2 is outside the 11 classes"), Error);
  // Every target ignored: the loss is 0 and so is every gradient.
  Tensor none = i32({-1, -1, -1, -1}, {4});
  CHECK(vocab_parallel_cross_entropy(local, none, layout, nullptr, -1).item() == 0.0);
  test::GradCheck zero;
  zero.zero_inputs = {0};
  test::check_gradients([&](const In& in) { return vocab_parallel_cross_entropy(in[0], none, layout, nullptr, -1); },
                        {test::leaf_of(local)}, zero);
}

TEST_CASE("vocab-parallel embedding: permuted units, a short unit, ids held elsewhere: values and FD gradient") {
  Tensor table = Tensor::randn({kVocab, 4}, 3, 0, 0, 1.0, DType::F64);  // [V, C], vocabulary order
  Tensor ids = i32({10, 0, 3, 8, 10, 5}, {2, 3});
  VocabLayout layout = permuted();
  Tensor local = test::local_table(table, layout);
  test::check_close(vocab_parallel_embedding(ids, local, layout, nullptr), embedding(ids, table), 0.0);
  auto lookup = [&](const VocabLayout& l) {
    return [&ids, l](const In& in) { return vocab_parallel_embedding(ids, in[0], l, nullptr); };
  };
  test::check_gradients(lookup(layout), {test::leaf_of(local)});

  // A share of the vocabulary (units 2 and 0, as one rank of several holds): the ids held
  // elsewhere (5) look up zeros, and only the rows held get gradient.
  VocabLayout share({2, 0}, kUnitRows, kVocab);
  Tensor mine = test::local_table(table, share);
  std::vector<double> got = vocab_parallel_embedding(ids, mine, share, nullptr).to_vector<double>();
  std::vector<double> want = embedding(ids, table).to_vector<double>();
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t k = 0; k < 4; ++k) {
      INFO("position ", p, " channel ", k);
      CHECK(got[p * 4 + k] == (p == 5 ? 0.0 : want[p * 4 + k]));
    }
  test::check_gradients(lookup(share), {test::leaf_of(mine)});
}

TEST_CASE("vocab-parallel embedding and loss tied through one table, as the model uses them: FD gradient") {
  // loss(W) = cross-entropy(embed(ids, W) W^T, targets): W gets gradient from both ends.
  VocabLayout layout = permuted();
  Tensor table = test::local_table(Tensor::randn({kVocab, 4}, 4, 0, 0, 1.0, DType::F64), layout);
  Tensor ids = i32({10, 0, 3, 8, 2, 5}, {6});
  Tensor targets = i32({9, -100, 0, 7, 10, 1}, {6});
  auto tied = [&](const In& in) {
    Tensor h = vocab_parallel_embedding(ids, in[0], layout, nullptr);  // [N, C]
    return vocab_parallel_cross_entropy(matmul(h, in[0], false, true), targets, layout, nullptr);
  };
  test::check_gradients(tied, {test::leaf_of(table)});
}

namespace {
// The same 11 ids in a table padded to 16 rows: unit 2 holds ids 8-10 and padded row 11, unit 3
// only padding (rows 12-15). Held in the order 3, 2, 0, 1: the padded unit first, padding inside
// the second, so the real columns are the local runs [4, 7) and [8, 16).
constexpr int64_t kPaddedRows = 16;
VocabLayout padded_permuted() { return VocabLayout({3, 2, 0, 1}, kUnitRows, kVocab, kPaddedRows); }

}  // namespace

TEST_CASE("vocab-parallel cross-entropy over a padded table: padded columns take no part, get zero gradient") {
  VocabLayout layout = padded_permuted();
  REQUIRE(layout.global_ids() == std::vector<int64_t>{12, 13, 14, 15, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7});
  REQUIRE(layout.real_runs() == std::vector<int32_t>{4, 7, 8, 16});
  Tensor all = Tensor::randn({6, kVocab}, 9, 0, 0, 3.0, DType::F64);  // [N, V] real columns
  Tensor targets = i32({10, -100, 0, 7, 8, 3}, {6});
  Tensor plain_in = test::leaf_of(all);
  Tensor plain = test::one_process_cross_entropy(plain_in, targets);
  plain.backward();

  Tensor x = test::leaf_of(test::local_columns(test::with_loud_padding(all, kPaddedRows, 40.0), layout));  // [N, 16] local
  Tensor loss = vocab_parallel_cross_entropy(x, targets, layout, nullptr);
  CHECK(loss.item() == doctest::Approx(plain.item()).epsilon(1e-12));
  loss.backward();
  std::vector<double> g = test::vocabulary_columns(x.grad(), layout).to_vector<double>();
  std::vector<double> want = plain_in.grad().to_vector<double>();
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < kPaddedRows; ++j) {
      INFO("row ", i, " column ", j);
      if (j < kVocab)
        CHECK(g[i * kPaddedRows + j] == doctest::Approx(want[i * kVocab + j]).epsilon(1e-12));
      else
        CHECK(g[i * kPaddedRows + j] == 0.0);
    }
  test::check_gradients([&](const In& in) { return vocab_parallel_cross_entropy(in[0], targets, layout, nullptr); },
                        {test::leaf_of(x)});

  // Padded ids are not classes: a target there is refused, as is an id to look up.
  CHECK_THROWS_WITH_AS(vocab_parallel_cross_entropy(x, i32({11, 0, 0, 0, 0, 0}, {6}), layout, nullptr),
                       doctest::Contains("target 11 of row 0 is outside the 11 classes"), Error);
  CHECK_THROWS_WITH_AS(vocab_parallel_embedding(i32({11}, {1}), Tensor::zeros({kPaddedRows, 2}, DType::F64), layout,
                                                nullptr),
                       doctest::Contains("token id 11 at position 0 is outside the vocabulary of 11"), Error);
}

TEST_CASE("gathered logits of a padded table drop the padded columns") {
  VocabLayout layout = padded_permuted();
  Tensor all = Tensor::randn({3, kVocab}, 10, 0, 0, 1.0, DType::F64);
  Tensor got = gather_vocab_logits(test::local_columns(test::with_loud_padding(all, kPaddedRows, 40.0), layout), layout, nullptr);
  CHECK(got.shape() == Shape{3, kVocab});
  test::check_close(got, all, 0.0);
}

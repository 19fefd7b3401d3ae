// The vocabulary-parallel embedding and cross-entropy over the ranks, with an uneven layout
// (permuted units, the short last unit, at 4 ranks a rank holding none) and ignored targets:
// loss and gathered gradients equal the single process's, and the gradient of the distributed
// function equals its finite differences (f64).
#include <doctest/doctest.h>

#include "core/ops/embedding.h"
#include "core/ops/matmul.h"
#include "parallel/tp/tp_ops.h"
#include "parallel/tp/vocab_parallel.h"
#include "tests/gradcheck.h"
#include "tests/mpi/counting_communicator.h"
#include "tests/mpi/mpi_context.h"
#include "tests/vocab_cases.h"

using namespace flextp;
using In = std::vector<Tensor>;

namespace {
// 23 ids in units of 4: unit 5 (ids 20-22) is short.
constexpr int64_t kVocab = 23, kUnitRows = 4;

// This rank's vocabulary units, in its local order.
std::vector<int64_t> my_units(int rank, int size) {
  if (size == 2) return rank == 0 ? std::vector<int64_t>{5, 1} : std::vector<int64_t>{4, 0, 3, 2};
  if (size == 4) return std::vector<std::vector<int64_t>>{{3}, {5, 0, 4}, {}, {2, 1}}[rank];
  std::vector<int64_t> units;  // any other size: unit u on rank (5u + 1) mod size, last first
  for (int64_t u = 5; u >= 0; --u)
    if ((5 * u + 1) % size == rank) units.push_back(u);
  return units;
}

Tensor i32(std::vector<int32_t> v, Shape s) { return Tensor::from_vector<int32_t>(v, s); }

// This rank's part of a replicated tensor, as the model's layers take it: its columns (or, with
// rows, its table rows) selected by a differentiable product, and the gradients of all ranks
// summed into the replicated input's in the backward. The finite-difference harness can then
// perturb the replicated input, the same entries on every rank, and every rank runs the same
// collectives.
Tensor my_columns(const Tensor& all, const VocabLayout& layout, Communicator* comm) {
  return matmul(copy_to_tensor_parallel(all, comm), test::selection(layout));  // [N, Vl]
}
Tensor my_rows(const Tensor& table, const VocabLayout& layout, Communicator* comm) {
  return matmul(test::selection(layout), copy_to_tensor_parallel(table, comm), true, false);  // [Vl, C]
}
}  // namespace

TEST_CASE("vocab-parallel cross-entropy over the ranks: uneven layout, ignored targets") {
  Communicator& c = test::world();
  VocabLayout layout(my_units(c.rank(), c.size()), kUnitRows, kVocab);
  Tensor all = Tensor::randn({6, kVocab}, 5, 0, 0, 3.0, DType::F64);  // [N, V], the same on every rank
  // The short unit's last id, both ends of other units, two ignored rows.
  Tensor targets = i32({22, -100, 0, 13, -100, 20}, {6});

  // Loss and gathered gradients against the same loss on one process, the whole vocabulary its own.
  Tensor one = test::leaf_of(all);
  Tensor expected = test::one_process_cross_entropy(one, targets);
  expected.backward();
  Tensor mine = test::leaf_of(test::local_columns(all, layout));
  Tensor loss = vocab_parallel_cross_entropy(mine, targets, layout, &c);
  CHECK(loss.item() == doctest::Approx(expected.item()).epsilon(1e-12));
  loss.backward();
  Tensor gathered = test::vocabulary_columns(mine.grad(), layout);
  c.all_reduce(gathered);
  test::check_close(gathered, one.grad(), 1e-12);
  std::vector<double> g = gathered.to_vector<double>();
  for (int64_t row : {1, 4})
    for (int64_t j = 0; j < kVocab; ++j) {
      INFO("ignored row ", row, " column ", j);
      CHECK(g[row * kVocab + j] == 0.0);
    }

  // The distributed function against its own finite differences.
  test::check_gradients_here(
      [&](const In& in) { return vocab_parallel_cross_entropy(my_columns(in[0], layout, &c), targets, layout, &c); },
      {test::leaf_of(all)});
}

TEST_CASE("vocab-parallel embedding over the ranks: uneven layout") {
  Communicator& c = test::world();
  VocabLayout layout(my_units(c.rank(), c.size()), kUnitRows, kVocab);
  Tensor table = Tensor::randn({kVocab, 4}, 6, 0, 0, 1.0, DType::F64);  // [V, C]
  Tensor ids = i32({22, 0, 13, 20, 3, 22, 7, 16}, {2, 4});
  Tensor weights = Tensor::randn({2, 4, 4}, 7, 0, 0, 1.0, DType::F64);

  Tensor one = test::leaf_of(table);
  Tensor expected = embedding(ids, one);
  sum(mul(expected, weights)).backward();
  Tensor mine = test::leaf_of(test::local_table(table, layout));
  Tensor got = vocab_parallel_embedding(ids, mine, layout, &c);
  test::check_close(got, expected, 0.0);
  sum(mul(got, weights)).backward();
  Tensor gathered = test::vocabulary_table(mine.grad(), layout);
  c.all_reduce(gathered);
  test::check_close(gathered, one.grad(), 1e-12);

  test::check_gradients_here(
      [&](const In& in) { return vocab_parallel_embedding(ids, my_rows(in[0], layout, &c), layout, &c); },
      {test::leaf_of(table)});
}

TEST_CASE("vocab-parallel embedding and loss tied through one table over the ranks, as in the model") {
  Communicator& c = test::world();
  VocabLayout layout(my_units(c.rank(), c.size()), kUnitRows, kVocab);
  Tensor ids = i32({22, 0, 13, 20, 3, 9}, {6});
  Tensor targets = i32({9, -100, 0, 22, 17, -100}, {6});
  auto tied = [&](const In& in) {
    Tensor w = my_rows(in[0], layout, &c);                                    // [Vl, C]
    Tensor h = copy_to_tensor_parallel(vocab_parallel_embedding(ids, w, layout, &c), &c);  // [N, C]
    return vocab_parallel_cross_entropy(matmul(h, w, false, true), targets, layout, &c);
  };
  test::check_gradients_here(tied, {test::leaf_of(Tensor::randn({kVocab, 4}, 8, 0, 0, 1.0, DType::F64))});
}

namespace {
// The 23 ids in a table padded to 32 rows: unit 5 holds ids 20-22 and padded row 23, units 6 and
// 7 only padding. At 4 ranks one rank holds nothing but padding.
constexpr int64_t kPaddedRows = 32;
std::vector<int64_t> my_padded_units(int rank, int size) {
  if (size == 2) return rank == 0 ? std::vector<int64_t>{5, 7, 1} : std::vector<int64_t>{4, 0, 6, 3, 2};
  if (size == 4) return std::vector<std::vector<int64_t>>{{3, 7}, {5, 0, 4}, {6}, {2, 1}}[rank];
  std::vector<int64_t> units;
  for (int64_t u = 7; u >= 0; --u)
    if ((5 * u + 1) % size == rank) units.push_back(u);
  return units;
}

}  // namespace

TEST_CASE("vocab-parallel cross-entropy over the ranks with a padded table equals one process; one all-gather") {
  Communicator& world = test::world();
  test::CountingCommunicator c(world);
  VocabLayout layout(my_padded_units(c.rank(), c.size()), kUnitRows, kVocab, kPaddedRows);
  Tensor all = Tensor::randn({6, kVocab}, 11, 0, 0, 3.0, DType::F64);
  Tensor targets = i32({22, -100, 0, 13, 20, 7}, {6});
  Tensor one = test::leaf_of(all);
  Tensor expected = test::one_process_cross_entropy(one, targets);
  expected.backward();

  Tensor mine = test::leaf_of(test::local_columns(test::with_loud_padding(all, kPaddedRows, 30.0), layout));
  Tensor loss = vocab_parallel_cross_entropy(mine, targets, layout, &c);
  // Every rank's row maxima, sums of exp and target logits in one buffer: nothing else.
  CHECK(c.calls == std::map<std::string, int>{{"all_gather", 1}});
  CHECK(loss.item() == doctest::Approx(expected.item()).epsilon(1e-12));
  loss.backward();
  CHECK(c.calls == std::map<std::string, int>{{"all_gather", 1}});  // nothing more
  Tensor gathered = test::vocabulary_columns(mine.grad(), layout);  // [N, 32]
  world.all_reduce(gathered);
  std::vector<double> g = gathered.to_vector<double>(), want = one.grad().to_vector<double>();
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < kPaddedRows; ++j) {
      INFO("row ", i, " column ", j);
      if (j < kVocab)
        CHECK(g[i * kPaddedRows + j] == doctest::Approx(want[i * kVocab + j]).epsilon(1e-12));
      else
        CHECK(g[i * kPaddedRows + j] == 0.0);
    }
}

// The vocabulary-parallel cross-entropy's one exchange: each rank's row max, its sum of exp
// relative to that max and its target logit, combined in rank order (sharded_ce_combine), give
// the log-sum-exp and the target logit of the whole row, wherever the row's max lies, with ranks
// that hold no column or only masked (-inf) ones, padded columns that must take no part, and
// logits so far apart (1e4) that any exp of them would overflow. Ranks are played here by
// column blocks of one process; tests/mpi/test_vocab_parallel.cpp runs the real exchange.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/dispatch.h"
#include "core/ops/sharded_cross_entropy.h"
#include "tests/gpu_skip.h"

using namespace flextp;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kRows = 6;

// One rank's columns of every row, and which of them hold real ids ([begin, end) runs).
struct Part {
  std::vector<std::vector<float>> rows;  // [kRows][columns]
  std::vector<int32_t> runs;
  std::vector<int32_t> target;  // per row: the target's column here, or -1
};

// The rows, per rank: row 0's max on rank 0, row 1's on rank 1, row 2's on rank 2; rows 3 and
// 4 with logits 1e4 apart between ranks (either way); row 5 with rank 1 masked to -inf. Rank 1
// has a padded column (the last, loud: it would win the max) outside its runs; rank 3 holds
// no column.
std::vector<Part> parts() {
  Part a{{{3.0f, 1.0f}, {0.5f, -2.0f}, {1.0f, 1.5f}, {1e4f, 9999.0f}, {-3.0f, 0.0f}, {0.25f, 0.5f}}, {0, 2},
         {1, -1, -1, 0, -1, -1}};
  Part b{{{-1.0f, 2.0f, 0.0f, 1e30f},
          {4.0f, 0.0f, 1.0f, 1e30f},
          {2.0f, -1.0f, 0.0f, 1e30f},
          {-2.0f, 0.0f, 1.0f, 1e30f},
          {1e4f, -1e4f, 9998.0f, 1e30f},
          {-kInf, -kInf, -kInf, 1e30f}},
         {0, 3},
         {-1, 2, -1, -1, 0, -1}};
  Part c{{{-5.0f}, {1.0f}, {6.0f}, {0.5f}, {2.0f}, {-1.0f}}, {0, 1}, {-1, -1, 0, -1, -1, 0}};
  Part d{std::vector<std::vector<float>>(kRows), {}, std::vector<int32_t>(kRows, -1)};
  return {a, b, c, d};
}

struct Combined {
  std::vector<float> lse, target;
};

// Every part's local passes on `dev`, stacked as the all-gather stacks them, combined there.
Combined combine_on(const std::vector<Part>& ps, Device dev) {
  const int64_t p = static_cast<int64_t>(ps.size());
  std::vector<float> stacked;
  for (const Part& part : ps) {
    int64_t v = static_cast<int64_t>(part.rows[0].size());
    std::vector<float> flat;
    for (const auto& row : part.rows) flat.insert(flat.end(), row.begin(), row.end());
    Tensor logits = Tensor::from_vector(flat, {kRows, v}, dev);
    Tensor runs = Tensor::from_vector(part.runs, {static_cast<int64_t>(part.runs.size() / 2), 2}, dev);
    Tensor target = Tensor::from_vector(part.target, {kRows}, dev);
    Tensor m = Tensor::empty({kRows}, DType::F32, dev), s = Tensor::empty({kRows}, DType::F32, dev),
           t = Tensor::empty({kRows}, DType::F32, dev);
    FLEXTP_DISPATCH(dev, sharded_ce_row_max, logits, runs, m);
    FLEXTP_DISPATCH(dev, sharded_ce_sums, logits, runs, m, target, s, t);
    for (const Tensor& stat : {m, s, t}) {
      std::vector<float> x = stat.to_vector<float>();
      stacked.insert(stacked.end(), x.begin(), x.end());
    }
  }
  Tensor gathered = Tensor::from_vector(stacked, {3 * p, kRows}, dev);
  Tensor m = Tensor::empty({kRows}, DType::F32, dev), s = Tensor::empty({kRows}, DType::F32, dev),
         t = Tensor::empty({kRows}, DType::F32, dev), lse = Tensor::empty({kRows}, DType::F32, dev),
         loss = Tensor::empty({}, DType::F32, dev);
  FLEXTP_DISPATCH(dev, sharded_ce_combine, gathered, m, s, t);
  Tensor counted = Tensor::from_vector(std::vector<float>(kRows, 1.0f), {kRows}, dev);
  FLEXTP_DISPATCH(dev, sharded_ce_loss, m, s, t, counted, kRows, lse, loss);
  return {lse.to_vector<float>(), t.to_vector<float>()};
}

// The whole row's log-sum-exp over the real columns of every part, in f64, and its target logit.
void check_against_whole_rows(const std::vector<Part>& ps, const Combined& got) {
  for (int64_t i = 0; i < kRows; ++i) {
    double m = -std::numeric_limits<double>::infinity(), target = 0;
    for (const Part& part : ps) {
      for (size_t r = 0; r < part.runs.size(); r += 2)
        for (int32_t j = part.runs[r]; j < part.runs[r + 1]; ++j) m = std::max(m, double(part.rows[i][j]));
      if (part.target[i] >= 0) target = part.rows[i][part.target[i]];
    }
    double s = 0;
    for (const Part& part : ps)
      for (size_t r = 0; r < part.runs.size(); r += 2)
        for (int32_t j = part.runs[r]; j < part.runs[r + 1]; ++j) s += std::exp(double(part.rows[i][j]) - m);
    double lse = m + std::log(s);
    INFO("row ", i, ": lse ", got.lse[i], ", whole row ", lse);
    CHECK(std::isfinite(got.lse[i]));
    CHECK(got.lse[i] == doctest::Approx(lse).epsilon(1e-6));
    CHECK(got.target[i] == target);
  }
}

}  // namespace

TEST_CASE("cross-entropy statistics combined over ranks equal the whole row's: any max, -inf, 1e4 apart, padding") {
  std::vector<Part> ps = parts();
  check_against_whole_rows(ps, combine_on(ps, Device::cpu()));
}

TEST_CASE("cross-entropy statistics of one rank pass through the combine unchanged") {
  // One rank: its max and sum come back bit for bit, so one process loses nothing to the combine.
  std::vector<float> stats{2.5f, -1.0f, 1.7f, 3.25f, 0.0f, 4.5f};  // [3, 2]: max, sum, target
  Tensor gathered = Tensor::from_vector(stats, {3, 2});
  Tensor m = Tensor::empty({2}, DType::F32), s = Tensor::empty({2}, DType::F32), t = Tensor::empty({2}, DType::F32);
  cpu::sharded_ce_combine(gathered, m, s, t);
  CHECK(m.to_vector<float>() == std::vector<float>{2.5f, -1.0f});
  CHECK(s.to_vector<float>() == std::vector<float>{1.7f, 3.25f});
  CHECK(t.to_vector<float>() == std::vector<float>{0.0f, 4.5f});
}

TEST_CASE("on the GPU, cross-entropy statistics combined over ranks equal the CPU's") {
  if (test::skip_without_gpu()) return;
  std::vector<Part> ps = parts();
  Combined gpu = combine_on(ps, Device::cuda(0));
  check_against_whole_rows(ps, gpu);
  Combined cpu = combine_on(ps, Device::cpu());
  for (int64_t i = 0; i < kRows; ++i) {
    INFO("row ", i);
    CHECK(gpu.lse[i] == doctest::Approx(cpu.lse[i]).epsilon(1e-6));
  }
}

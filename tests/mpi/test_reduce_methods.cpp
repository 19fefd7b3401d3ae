// Each way of summing over ranks, forced rather than chosen by timing: the native all-reduce and
// reduce-scatter + all-gather give exact sums at every length (padding included), and the model
// trained through either gives the single process's loss and gradients.
#include <doctest/doctest.h>

#include "core/autograd.h"
#include "parallel/balance/step_clock.h"
#include "parallel/comm/cost_model.h"
#include "parallel/tp/unit_gather.h"
#include "tests/mpi/counting_communicator.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {
const ReduceMethod kReductions[] = {ReduceMethod::AllReduce, ReduceMethod::ReduceScatterAllGather};
}

TEST_CASE("every reduction method sums exactly at every length through the step clock as training does") {
  Communicator& comm = test::world();
  int n = comm.size(), r = comm.rank();
  for (ReduceMethod method : kReductions) {
    StepClock clock(comm, SlowdownSchedule{});
    clock.set_reduce_method(method);
    for (int64_t len = 1; len <= 3 * n + 1; ++len) {  // multiples of n and every remainder
      INFO(std::string(method_name(method)), ", ", len, " elements");
      std::vector<float> mine(len), sum(len, 0.0f), top(len, 0.0f);
      for (int64_t i = 0; i < len; ++i) {
        mine[i] = static_cast<float>((r + 1) * (i + 1) + (r == 1 ? 1000 : 0));  // distinct per rank and element
        for (int q = 0; q < n; ++q) {
          float v = static_cast<float>((q + 1) * (i + 1) + (q == 1 ? 1000 : 0));
          sum[i] += v;
          top[i] = std::max(top[i], v);
        }
      }
      Tensor t = Tensor::from_vector(mine, {len});
      clock.all_reduce(t, ReduceOp::Sum);
      CHECK(t.to_vector<float>() == sum);
      Tensor m = Tensor::from_vector(mine, {len});
      clock.all_reduce(m, ReduceOp::Max);
      CHECK(m.to_vector<float>() == top);
      Tensor direct = Tensor::from_vector(mine, {len});  // the cost model's own entry point
      reduce_by(comm, direct, method);
      CHECK(direct.to_vector<float>() == sum);
    }
  }
}

TEST_CASE("every reduction method gives the single process's loss and gradients (f64)") {
  Communicator& comm = test::world();
  GPTConfig c = test::tiny_config(DType::F64);
  GPT single(c);
  Tensor ids = test::tokens(3, 7, 11), targets = test::tokens(3, 7, 12);  // 21 tokens: no multiple of 2 or 4
  Tensor ref_loss = single.loss(ids, targets);
  ref_loss.backward();
  std::vector<Parameter*> ref = single.parameters();
  for (ReduceMethod method : kReductions)
    for (const auto& [name, part] : test::partitions(c, comm.size())) {
      std::string what = std::string(method_name(method)) + ", partition " + name;  // (clang: no structured bindings in INFO)
      INFO(what);
      test::CountingCommunicator counted(comm);
      StepClock clock(counted, SlowdownSchedule{});
      clock.set_reduce_method(method);
      GPT tp(c, LocalUnits::of_rank(c, part, comm.rank()), &clock);
      Tensor loss = tp.loss(ids, targets);
      CHECK(test::relative(loss.item(), ref_loss.item()) < 1e-12);
      loss.backward();
      // The sums went the forced way and no other.
      bool rs_ag = method == ReduceMethod::ReduceScatterAllGather;
      CHECK(counted.count(rs_ag ? "reduce_scatter" : "all_reduce sum") > 0);
      CHECK(counted.count(rs_ag ? "all_reduce sum" : "reduce_scatter") == 0);
      std::vector<Parameter*> mine = tp.parameters();
      REQUIRE(mine.size() == ref.size());
      for (size_t i = 0; i < mine.size(); ++i) {
        Tensor g = mine[i]->grad().defined() ? mine[i]->grad() : Tensor::zeros(mine[i]->value.shape(), c.dtype);
        test::check_same_tensor(gather_logical(*mine[i], g, &clock), ref[i]->grad(), 1e-10, mine[i]->name);
      }
    }
}

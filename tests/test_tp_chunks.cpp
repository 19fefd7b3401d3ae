// A batch run in chunks (GPT::set_tp_chunks) is the whole batch: the same loss and gradients on
// one process, dropout included, however the chunks fall; and a started all-reduce's wait is
// waiting for the step clock.
#include <doctest/doctest.h>

#include "core/autograd.h"
#include "core/random.h"
#include "nn/gpt.h"
#include "parallel/balance/active_units.h"
#include "parallel/balance/step_clock.h"
#include "tests/gradcheck.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {

struct LossAndGrads {
  double loss = 0;
  std::vector<Tensor> grads;
};

// One forward and backward of a batch of 3 rows at step 5, from window 2 of the step's batch;
// `resized`: with units skipped as priority resizing skips them.
LossAndGrads run(const GPTConfig& c, int64_t chunks, bool resized = false) {
  GPT model(c);
  model.set_tp_chunks(chunks);
  if (resized) {
    std::vector<Parameter*> params = model.parameters();
    set_active_units(group_parameters(params, "h.0.head"), 1);
    set_active_units(group_parameters(params, "h.1.mlp"), 2);
  }
  model.set_step(5, 2);
  Tensor loss = model.loss(test::tokens(3, 7, 1), test::tokens(3, 7, 2));
  loss.backward();
  LossAndGrads out{loss.item(), {}};
  for (Parameter* p : model.parameters()) out.grads.push_back(p->grad());
  return out;
}

}  // namespace

TEST_CASE("a batch in 2, 3 or more chunks than rows gives the whole batch's loss and gradients (f64, dropout), every MLP kind") {
  for (const std::string& mlp : test::mlp_kinds()) {
    GPTConfig c = test::tiny_config(DType::F64, mlp);
    c.dropout = 0.3;
    LossAndGrads whole = run(c, 1);
    GPTConfig no_dropout = c;
    no_dropout.dropout = 0;
    REQUIRE(test::relative(run(no_dropout, 1).loss, whole.loss) > 1e-3);  // dropout is on and matters
    for (int64_t chunks : {2, 3, 5}) {  // rows 2 + 1; 1 + 1 + 1; 5 chunks of 3 rows: one per row
      INFO(mlp, " MLP, ", chunks, " chunks");
      LossAndGrads got = run(c, chunks);
      CHECK(test::relative(got.loss, whole.loss) < 1e-12);
      for (size_t i = 0; i < got.grads.size(); ++i) test::check_same_tensor(got.grads[i], whole.grads[i], 1e-10, "gradient");
    }
  }
}

TEST_CASE("a resized model (units skipped) in chunks gives the whole batch's loss and gradients (f64, dropout)") {
  GPTConfig c = test::tiny_config(DType::F64);
  c.dropout = 0.3;
  LossAndGrads whole = run(c, 1, true);
  REQUIRE(test::relative(run(c, 1).loss, whole.loss) > 1e-6);  // the skipping is real
  LossAndGrads got = run(c, 2, true);
  CHECK(test::relative(got.loss, whole.loss) < 1e-12);
  for (size_t i = 0; i < got.grads.size(); ++i) {
    if (!whole.grads[i].defined()) {
      CHECK_FALSE(got.grads[i].defined());
      continue;
    }
    test::check_same_tensor(got.grads[i], whole.grads[i], 1e-10, "gradient");
  }
}

TEST_CASE("a batch in no chunks is refused") {
  GPT model(test::tiny_config(DType::F64));
  CHECK_THROWS_WITH(model.set_tp_chunks(0), doctest::Contains("at least 1"));
}

TEST_CASE("the step clock counts a started all-reduce's wait as waiting and the compute around it as compute") {
  std::unique_ptr<Communicator> single = make_single_process_communicator();
  StepClock clock(*single, SlowdownSchedule{});
  double now = 0;
  clock.set_time([&] { return now; }, [&](double ms) { now += ms; });
  clock.begin_step(0);
  Tensor t = Tensor::ones({4});
  now += 3;  // compute before the start
  std::unique_ptr<PendingReduce> p = clock.start_all_reduce(t, ReduceOp::Sum);
  now += 4;  // compute between the start and the wait
  p->wait();
  now += 2;  // and after it
  clock.end_segment();
  CHECK(clock.compute_ms() == doctest::Approx(9));
  CHECK(clock.wait_ms() == doctest::Approx(0));
  test::check_values(t, {1, 1, 1, 1});
}

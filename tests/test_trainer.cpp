// One training step on one process, read from its report: the loss is the batch's, a poisoned
// step is skipped and changes no weight, and too many skipped steps in a row stop the run after
// the last one's warning.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "train/trainer.h"

#include "core/autograd.h"
#include "mpi/tiny_gpt.h"
#include "nn/unit_costs.h"
#include "nn/units.h"
#include "parallel/comm/communicator.h"

using namespace flextp;

namespace {

// A tiny GPT and everything its Trainer needs, on one process.
struct OneProcess {
  StepSettings o;
  uint64_t seed = 1337;
  GPTConfig c = test::tiny_config(DType::F32);
  std::vector<int32_t> tokens;
  std::unique_ptr<Communicator> single = make_single_process_communicator();
  std::unique_ptr<StepClock> clock;
  std::unique_ptr<GPT> model;
  AdamW opt{AdamWOptions{}};
  std::unique_ptr<Balancer> balancer;
  Watchdog watchdog{0, 0};
  std::unique_ptr<Trainer> trainer;
  int warnings = 0;  // skipped steps heard of

  explicit OneProcess(std::vector<int64_t> nan_steps, int64_t max_bad_steps = 10) {
    o.batch = 2, o.seq_len = 8, o.steps = 5, o.schedule = {1e-2, 1e-4, 0, 5}, o.grad_clip = 1.0;
    o.max_bad_steps = max_bad_steps;
    for (int i = 0; i < 200; ++i) tokens.push_back(static_cast<int32_t>((i * 7 + i / 5) % c.vocab_size));
    clock = std::make_unique<StepClock>(*single, SlowdownSchedule({}, 1));
    Partition all = Partition::even(unit_groups(c), 1);
    model = std::make_unique<GPT>(c, LocalUnits::of_rank(c, all, 0), clock.get());
    balancer = std::make_unique<Balancer>(*single, gpt_model_costs(c, {o.batch, o.seq_len, 2}), all, CommCostModel{},
                                          BalanceOptions{});
    trainer = std::make_unique<Trainer>(o, *model, opt, *clock, *balancer, watchdog,
                                        BatchSampler(&tokens, o.batch, o.seq_len, seed),
                                        FaultHook(nan_steps, "", "", 0, 1), [this](const StepReport&) { ++warnings; });
  }
  std::vector<std::vector<float>> weights() {
    std::vector<std::vector<float>> out;
    for (Parameter* p : model->parameters()) out.push_back(p->value.to_vector<float>());
    return out;
  }
};

}  // namespace

TEST_CASE("a training step reports the batch's loss; a poisoned step is skipped and changes no weight") {
  OneProcess run({2});
  double expected = [] {  // the first batch's loss under the untrained weights
    OneProcess fresh({});
    NoGradGuard ng;
    Batch b = BatchSampler(&fresh.tokens, fresh.o.batch, fresh.o.seq_len, fresh.seed).at_step(0, 0, fresh.o.batch);
    return fresh.model->loss(b.ids, b.targets).item();
  }();
  StepReport first = run.trainer->step(0);
  CHECK(first.step == 1);
  CHECK(first.loss == expected);
  CHECK(first.lr == CosineSchedule{1e-2, 1e-4, 0, 5}.at(0));
  CHECK(first.grad_norm > 0);
  CHECK(!first.skipped);
  CHECK(first.tokens_per_s > 0);

  std::vector<std::vector<float>> before = run.weights();
  StepReport poisoned = run.trainer->step(1);
  CHECK(poisoned.skipped);
  CHECK(std::isnan(poisoned.loss));
  CHECK(std::isnan(poisoned.grad_norm));
  CHECK(poisoned.bad_in_row == 1);
  CHECK(poisoned.bad_total == 1);
  CHECK(run.warnings == 1);
  CHECK(run.weights() == before);

  StepReport after = run.trainer->step(2);
  CHECK(!after.skipped);
  CHECK(after.bad_in_row == 0);
  CHECK(after.bad_total == 1);
  CHECK(run.weights() != before);
  CHECK(!run.trainer->step(3).last);
  CHECK(run.trainer->step(4).last);
}

TEST_CASE("too many skipped steps in a row stop training, after the last one's warning") {
  OneProcess run({1, 2}, 2);
  CHECK(run.trainer->step(0).skipped);
  CHECK_THROWS_WITH_AS(run.trainer->step(1), doctest::Contains("stopping at step 2: 2 steps in a row"), Error);
  CHECK(run.warnings == 2);
}

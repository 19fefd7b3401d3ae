// How many times one training step of a tensor-parallel group synchronises its ranks. Under real
// contention every collective waits for a rank's next time slice, so the count is a cost of its
// own: this pins it for the tiny GPT, so that a change adding one fails here (the count is
// deterministic; nothing is timed).
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>

#include "train/trainer.h"

#include "nn/unit_costs.h"
#include "tests/mpi/counting_communicator.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {

// A tiny GPT's Trainer on every rank of `comm` (the world by default), one replica, every
// collective counted.
struct CountedRun {
  StepSettings o;
  GPTConfig c = test::tiny_config(DType::F32);
  std::vector<int32_t> tokens;
  test::CountingCommunicator counted;
  StepClock clock{counted, SlowdownSchedule({}, counted.size())};
  std::unique_ptr<GPT> model;
  AdamW opt{AdamWOptions{}};
  std::unique_ptr<Balancer> balancer;
  Watchdog watchdog{0, 0};
  std::unique_ptr<Trainer> trainer;

  explicit CountedRun(Communicator& comm = test::world(), double grad_clip = 1.0) : counted(comm) {
    o.batch = 2, o.seq_len = 8, o.steps = 4, o.schedule = {1e-2, 1e-4, 0, 4}, o.grad_clip = grad_clip;
    for (int i = 0; i < 200; ++i) tokens.push_back(static_cast<int32_t>((i * 7 + i / 5) % c.vocab_size));
    const int n = counted.size();
    Partition even = Partition::even(unit_groups(c), n);
    model = std::make_unique<GPT>(c, LocalUnits::of_rank(c, even, counted.rank()), &clock);
    balancer = std::make_unique<Balancer>(clock.untimed(), gpt_model_costs(c, {o.batch, o.seq_len, n}), even,
                                          CommCostModel{}, BalanceOptions{});
    trainer = std::make_unique<Trainer>(o, *model, opt, clock, *balancer, watchdog,
                                        BatchSampler(&tokens, o.batch, o.seq_len, 1337),
                                        FaultHook({}, "", "", counted.rank(), n), [](const StepReport&) {});
  }
  // The collectives of one step, by kind.
  StepReport last;
  std::map<std::string, int> step(int64_t s) {
    counted.calls.clear();
    last = trainer->step(s);
    REQUIRE(!last.skipped);
    return counted.calls;
  }
};

std::string describe(const std::map<std::string, int>& calls) {
  std::string out;
  for (const auto& kv : calls) out += kv.first + " x" + std::to_string(kv.second) + "; ";
  return out;
}

int total(const std::map<std::string, int>& calls) {
  int n = 0;
  for (const auto& [name, count] : calls) n += count;
  return n;
}

}  // namespace

TEST_CASE("one training step of a tensor-parallel group synchronises its ranks a pinned number of times") {
  CountedRun run;
  // Per step of the 2-layer tiny GPT: the embedding's sum (forward); per layer, the attention's
  // and the MLP's row-parallel sums (forward) and the sums of their column-parallel inputs'
  // gradients (backward), 4 x 2; the LM head's input gradient (backward); the vocabulary-parallel
  // cross-entropy's one exchange of its row statistics; then one all-gather that carries the
  // monitor's row and the gradient norm's partial squares together.
  const std::map<std::string, int> expected{{"all_reduce sum", 10}, {"all_gather", 2}};
  for (int64_t s = 0; s < 3; ++s) {
    std::map<std::string, int> calls = run.step(s);
    INFO("step ", s, ": ", describe(calls));
    CHECK(calls == expected);
    CHECK(total(calls) == 12);
  }
}

TEST_CASE("the gradient norm that travels with the monitor's row is the one process's, the same on every rank") {
  // The norm is summed in rank order from the gathered squares: it must count every unit once
  // (split parameters over the ranks, replicated ones once) and be bitwise equal on every rank,
  // since all ranks clip by it and skip a step together.
  std::unique_ptr<Communicator> single = make_single_process_communicator();
  CountedRun alone(*single, 0), spread(test::world(), 0);  // the norm is reported, nothing clipped
  for (int64_t s = 0; s < 2; ++s) {
    alone.step(s);
    spread.step(s);
    INFO("step ", s, ": one process ", alone.last.grad_norm, ", ", spread.counted.size(), " ranks ",
         spread.last.grad_norm);
    CHECK(spread.last.grad_norm == doctest::Approx(alone.last.grad_norm).epsilon(1e-5));
    Tensor norms = Tensor::from_vector<double>({spread.last.grad_norm}, {1});
    Tensor all = Tensor::empty({spread.counted.size(), 1}, DType::F64);
    test::world().all_gather(norms, all);
    for (double x : all.to_vector<double>()) CHECK(x == spread.last.grad_norm);
  }
}

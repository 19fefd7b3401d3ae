// Clipping on a 2 x 2 grid whose replicas hold different partitions. The gradient norm is summed
// in an order that follows the partition, so each replica's own norm has its own rounding; every
// replica must clip by one norm (replica 0's), or their updates, and then their weights, part.
// Checked at every step of the Trainer, bitwise, with nothing timed: the window shares are even
// and no policy moves a unit. In f64, where a scale one rounding apart changes the gradients'
// bits (in f32 it rarely survives the rounding to float; the one-norm check sees it there).
#include <doctest/doctest.h>

#include <memory>

#include "train/trainer.h"

#include "nn/unit_costs.h"
#include "parallel/dp/replica_agreement.h"
#include "tests/mpi/grid_comms.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

TEST_CASE("replicas with different partitions clip every step by one norm and keep bitwise the same weights") {
  Communicator& world = test::world();
  if (world.size() != 4) return;  // 2 replicas of 2 ranks
  test::GridComms g = test::grid_of(2);
  StepSettings o;
  o.batch = 4, o.seq_len = 7, o.steps = 6, o.schedule = {1e-2, 1e-4, 0, 6};
  o.grad_clip = 1e-3;  // far below the tiny model's norms: every step is clipped
  o.speed_shares = false;
  GPTConfig c = test::tiny_config(DType::F64);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 200; ++i) tokens.push_back(static_cast<int32_t>((i * 7 + i / 5) % c.vocab_size));
  // Replica 0 even, replica 1 with ranks that hold all of some groups and none of others.
  const std::vector<std::pair<std::string, Partition>> parts = test::partitions(c, 2);
  const Partition& part = g.grid.dp_rank == 0 ? parts[0].second : parts[2].second;
  StepClock clock(*g.tp, SlowdownSchedule({}, 2));
  GPT model(c, LocalUnits::of_rank(c, part, g.grid.tp_rank), &clock);
  AdamW opt{AdamWOptions{}};
  BalanceOptions balancing;
  balancing.replicas = g.grid.dp;  // the links are judged over the replicas
  Balancer balancer(clock.untimed(), gpt_model_costs(c, {2, o.seq_len, 2}), part, CommCostModel{}, balancing);
  Watchdog watchdog(0, 0);
  Trainer trainer(o, model, opt, clock, balancer, watchdog, BatchSampler(&tokens, o.batch, o.seq_len, 1337),
                  FaultHook({}, "", "", world.rank(), world.size()), [](const StepReport&) {},
                  Replicas{g.grid, g.dp.get(), 4096, &world});
  for (int64_t s = 0; s < o.steps; ++s) {
    INFO("step ", s + 1);
    StepReport r = trainer.step(s);
    REQUIRE(!r.skipped);
    CHECK(r.grad_norm > 10 * o.grad_clip);
    CHECK(balancer.partition() == part);  // no unit moved: the partitions still differ
    // One norm on every rank of the grid, to the bit ...
    Tensor mine = Tensor::from_vector<double>({r.grad_norm}, {1});
    Tensor all = Tensor::empty({world.size(), 1}, DType::F64);
    world.all_gather(mine, all);
    for (double x : all.to_vector<double>()) CHECK(x == r.grad_norm);
    // ... so every unit's weights and optimizer state are the same in both replicas, to the bit.
    CHECK_NOTHROW(check_replica_weights(world, g.grid, model.parameters()));
  }
}

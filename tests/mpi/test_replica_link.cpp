// The link's time across data-parallel replicas (issue 44, item 11): a replica that waits in the
// gradient sum for a slower one must not make the link look slow, so the link watch of every rank
// is fed the least wait of any replica's group, never the largest nor its own group's. Checked on
// the Trainer, end to end (group table -> WindowShares::after_step -> Balancer::observe_replicas),
// with replica 1 slowed 4x so that replica 0 waits for it.
#include <doctest/doctest.h>

#include <algorithm>

#include "nn/unit_costs.h"
#include "tests/mpi/grid_comms.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"
#include "train/trainer.h"

using namespace flextp;

namespace {

// Every rank's value, gathered over the world.
std::vector<double> over_world(double mine) {
  Communicator& world = test::world();
  Tensor all = Tensor::empty({world.size(), 1}, DType::F64);
  world.all_gather(Tensor::from_vector<double>({mine}, {1}), all);
  return all.to_vector<double>();
}

// Three steps of a tiny GPT's Trainer on a grid of `tp` ranks per replica, replica 1 slowed.
void check_link_time(int tp) {
  test::GridComms g = test::grid_of(tp);
  INFO(g.grid.str());
  StepSettings o;
  o.batch = 4, o.seq_len = 7, o.steps = 3, o.schedule = {1e-2, 1e-4, 0, 3};
  o.speed_shares = false;  // even shares: the slow replica stays slow, the other waits for it
  GPTConfig c = test::tiny_config(DType::F32);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 200; ++i) tokens.push_back(static_cast<int32_t>((i * 7 + i / 5) % c.vocab_size));
  std::vector<StragglerSpec> slow;
  for (int r = 0; r < tp && g.grid.dp_rank == 1; ++r) slow.push_back({r, 4.0});
  const Partition part = Partition::even(unit_groups(c), tp);
  StepClock clock(*g.tp, SlowdownSchedule(slow, tp));
  GPT model(c, LocalUnits::of_rank(c, part, g.grid.tp_rank), &clock);
  AdamW opt{AdamWOptions{}};
  BalanceOptions balancing;
  balancing.policy = "none";
  balancing.replicas = g.grid.dp;  // the links are judged over the replicas
  Balancer balancer(clock.untimed(), gpt_model_costs(c, {2, o.seq_len, tp}), part, CommCostModel{}, balancing);
  Watchdog watchdog(0, 0);
  Trainer trainer(o, model, opt, clock, balancer, watchdog, BatchSampler(&tokens, o.batch, o.seq_len, 1337),
                  FaultHook({}, "", "", test::world().rank(), test::world().size()), [](const StepReport&) {},
                  Replicas{g.grid, g.dp.get(), 4096, &test::world()});
  for (int64_t s = 0; s < o.steps; ++s) {
    INFO("step ", s + 1);
    const StepReport r = trainer.step(s);
    REQUIRE(!r.skipped);
    // Each group's own least wait, from its monitor's table of the step; then every rank's.
    const std::vector<double> groups = over_world(least_wait_ms(balancer.monitor().table()));
    const double least = *std::min_element(groups.begin(), groups.end());
    const double most = *std::max_element(groups.begin(), groups.end());
    REQUIRE(most > least);  // the replicas waited differently: the check below can tell them apart
    CHECK(r.replicas.least_wait_ms == least);
    CHECK(r.balance.link.comm_ms == least);  // what the link watch recorded
  }
}

}  // namespace

TEST_CASE("across replicas the link's time is the least wait of any replica, never the largest") {
  const int n = test::world().size();
  if (n < 2) return;
  check_link_time(1);
  if (n > 2 && n % 2 == 0) check_link_time(2);
}

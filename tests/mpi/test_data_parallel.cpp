// Data x tensor parallelism equals the single process: every grid of the world's ranks (tp ranks
// per replica, world / tp replicas), every partition, with and without micro-steps, gives the
// loss and every gradient (and the clipping norm) of one process on the whole batch, in f64.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "core/autograd.h"
#include "core/ops/shape_ops.h"
#include "optim/clip.h"
#include "parallel/dp/gradient_sync.h"
#include "parallel/dp/grid.h"
#include "parallel/dp/micro_batches.h"
#include "parallel/balance/active_units.h"
#include "parallel/dp/replica_agreement.h"
#include "parallel/tp/unit_gather.h"
#include "tests/mpi/counting_communicator.h"
#include "tests/mpi/grid_comms.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {

using test::check_same_tensor;
using test::relative;
using test::tokens;

using test::GridComms;
using test::grid_of;

// Every grid of the world: one group of all ranks, pure data parallelism, and 2 x (n / 2).
std::vector<int> grids(int n) {
  std::vector<int> tps{n};
  if (n > 1) tps.push_back(1);
  if (n > 2 && n % 2 == 0) tps.push_back(2);
  return tps;
}

}  // namespace

TEST_CASE("a grid's windows, micro-steps and gradient sum give one process's loss, gradients and norm (f64)") {
  Communicator& world = test::world();
  GPTConfig c = test::tiny_config(DType::F64);
  const int64_t batch = 8;
  Tensor ids = tokens(batch, 7, 1), targets = tokens(batch, 7, 2);
  test::OneProcess one(c, ids, targets);
  Tensor ref_loss = one.loss;
  const std::vector<Parameter*>& ref = one.params;
  const double ref_norm = one.norm;
  for (int tp : grids(world.size())) {
    GridComms g = grid_of(tp);
    auto [first, share] = g.grid.windows(batch);
    Batch mine{slice_rows(ids, first, share), slice_rows(targets, first, share)};
    for (const auto& [name, part] : test::partitions(c, tp))
      for (int64_t micro : {int64_t{0}, int64_t{1}, share / 2}) {
        if (micro == 0 && name != "proportional") continue;  // whole shares once: the rest with micro-steps
        std::string what = g.grid.str() + ", partition " + name + ", micro-batch " + std::to_string(micro);
        INFO(what);
        GPT model(c, LocalUnits::of_rank(c, part, g.grid.tp_rank), g.tp_or_null());
        double local = accumulate_gradients(mine, micro, batch, [&](const Tensor& i, const Tensor& t, int64_t) {
          return model.loss(i, t);
        });
        Tensor loss = Tensor::from_vector<double>({local}, {1});
        g.dp->all_reduce(loss, ReduceOp::Sum);
        CHECK(relative(loss.item(), ref_loss.item()) < 1e-12);
        std::vector<Parameter*> params = model.parameters();
        test::CountingCommunicator counted(*g.dp), counted_world(world);
        GradientSync sync(counted, counted_world, g.grid, part, 4096);  // small buckets: several per model
        sync.sum(params, part);
        if (g.grid.dp > 1) {
          CHECK(sync.stats().buckets > 1);
          CHECK(counted.calls["all_reduce sum"] == sync.stats().buckets);
          // The presence and unit flags, and on the first sum the owner lists and the weight check.
          CHECK(counted_world.calls["all_reduce sum"] == 3);
          CHECK(counted_world.count("send_recv") == 0);  // the replicas agree: no exchange
        }
        REQUIRE(params.size() == ref.size());
        for (size_t i = 0; i < params.size(); ++i) {
          Tensor gr = params[i]->grad().defined() ? params[i]->grad() : Tensor::zeros(params[i]->value.shape(), c.dtype);
          check_same_tensor(gather_logical(*params[i], gr, g.tp_or_null()), ref[i]->grad(), 1e-10, params[i]->name);
        }
        CHECK(relative(test::global_grad_norm(params, g.tp_or_null()), ref_norm) < 1e-10);
      }
  }
}

TEST_CASE("one bucket or many, the data-parallel sum is the same, and a gradient no replica has stays absent") {
  Communicator& world = test::world();
  GridComms g = grid_of(1);  // every rank its own replica
  GPTConfig c = test::tiny_config(DType::F64);
  Partition all = Partition::even(unit_groups(c), 1);
  std::vector<std::vector<double>> sums[2];
  int k = 0;
  for (int64_t bucket : {int64_t{1}, int64_t{25} << 20}) {
    GPT model(c, LocalUnits::of_rank(c, all, 0), nullptr);
    model.loss(tokens(2, 7, 10 + world.rank()), tokens(2, 7, 20 + world.rank())).backward();
    std::vector<Parameter*> params = model.parameters();
    params.back()->value.zero_grad();  // a gradient absent on every replica
    GradientSync sync(*g.dp, world, g.grid, all, bucket);
    sync.sum(params, all);
    CHECK(!params.back()->grad().defined());
    // Large buckets: one for the replicated parameters, laid out alike on every slot, one for the units.
    CHECK(sync.stats().buckets == (bucket == 1 ? static_cast<int64_t>(params.size()) - 1 : 2));
    for (size_t i = 0; i + 1 < params.size(); ++i) sums[k].push_back(params[i]->grad().to_vector<double>());
    ++k;
  }
  CHECK(sums[0] == sums[1]);
}

TEST_CASE("replicas whose weights differ stop with a clear error, all of them") {
  Communicator& world = test::world();
  if (world.size() < 2) return;
  for (int tp : grids(world.size())) {
    GridComms g = grid_of(tp);
    if (g.grid.dp == 1) continue;
    INFO(g.grid.str());
    GPTConfig c = test::tiny_config(DType::F32);
    Partition p = test::partitions(c, tp)[2].second;  // with ranks holding none of a group
    GPT model(c, LocalUnits::of_rank(c, p, g.grid.tp_rank), g.tp_or_null());
    std::vector<Parameter*> params = model.parameters();
    CHECK_NOTHROW(check_replica_weights(world, g.grid, params));
    // Another replica keeping the same units in another local order is still the same model.
    for (Parameter* q : params)
      if (!q->replicated() && q->units.size() > 1 && g.grid.dp_rank == 1) {
        std::vector<Parameter*> group = group_parameters(params, q->group().name);
        std::vector<int64_t> reversed(q->units.rbegin(), q->units.rend());
        reorder_units(group, reversed);
        break;
      }
    CHECK_NOTHROW(check_replica_weights(world, g.grid, params));
    // One unit's row nudged on the last replica's rank holding the first vocabulary units.
    for (Parameter* q : params)
      if (q->name == "wte.weight" && !q->units.empty() && g.grid.dp_rank == g.grid.dp - 1) {
        q->value.data<float>()[0] += 1e-6f;
        break;
      }
    CHECK_THROWS_WITH_AS(check_replica_weights(world, g.grid, params), doctest::Contains("replicas have diverged"), Error);
  }
}

TEST_CASE("a replicated parameter that differs between a replica's tensor ranks stops the run, naming the rank") {
  Communicator& world = test::world();
  for (int tp : grids(world.size())) {
    if (tp == 1) continue;
    GridComms g = grid_of(tp);
    INFO(g.grid.str());
    GPTConfig c = test::tiny_config(DType::F32);
    GPT model(c, LocalUnits::of_rank(c, Partition::even(unit_groups(c), tp), g.grid.tp_rank), g.tp_or_null());
    std::vector<Parameter*> params = model.parameters();
    CHECK_NOTHROW(check_replica_weights(world, g.grid, params));
    // The last tensor rank of the last replica: its copy of ln_f's weight, one bit off.
    for (Parameter* q : params)
      if (q->name == "ln_f.weight" && g.grid.dp_rank == g.grid.dp - 1 && g.grid.tp_rank == tp - 1)
        q->value.data<float>()[3] = std::nextafter(q->value.data<float>()[3], 2.0f);
    CHECK_THROWS_WITH_AS(check_replica_weights(world, g.grid, params),
                         doctest::Contains(("ln_f.weight on tensor rank " + std::to_string(tp - 1)).c_str()), Error);
  }
}

// Uneven window shares across replicas (parallel/dp/window_shares.h): a grid whose replicas
// compute 3 and 1, or 5, 1, 1 and 1 windows of a step gives one process's loss and every gradient
// (so the even split's, which test_data_parallel checks), in f64; and every rank of every replica
// measures the same speeds and decides the same shares.
#include <doctest/doctest.h>

#include <memory>

#include "core/autograd.h"
#include "core/ops/shape_ops.h"
#include "parallel/dp/gradient_sync.h"
#include "parallel/dp/grid.h"
#include "parallel/dp/micro_batches.h"
#include "parallel/dp/window_shares.h"
#include "parallel/tp/unit_gather.h"
#include "tests/mpi/grid_comms.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {

// Tensor-parallel group sizes with several replicas: pure data parallelism, and 2 x (n / 2).
std::vector<int> grids_with_replicas(int n) {
  std::vector<int> tps;
  if (n > 1) tps.push_back(1);
  if (n > 2 && n % 2 == 0) tps.push_back(2);
  return tps;
}

// Uneven shares of 8 windows for `dp` replicas, the first replica's larger and smaller.
std::vector<std::vector<int64_t>> uneven_shares(int dp) {
  if (dp == 2) return {{6, 2}, {2, 6}, {7, 1}};
  if (dp == 4) return {{5, 1, 1, 1}, {1, 1, 1, 5}, {2, 4, 1, 1}};
  return {};
}

}  // namespace

TEST_CASE("uneven window shares across replicas give one process's loss and every gradient (f64)") {
  Communicator& world = test::world();
  GPTConfig c = test::tiny_config(DType::F64);
  const int64_t batch = 8;
  Tensor ids = test::tokens(batch, 7, 3), targets = test::tokens(batch, 7, 4);
  test::OneProcess one(c, ids, targets);
  Tensor ref_loss = one.loss;
  const std::vector<Parameter*>& ref = one.params;
  for (int tp : grids_with_replicas(world.size())) {
    test::GridComms g = test::grid_of(tp);
    Partition part = test::partitions(c, tp).back().second;
    for (const std::vector<int64_t>& shares : uneven_shares(g.grid.dp))
      for (int64_t micro : {int64_t{0}, int64_t{1}}) {
        std::string what = g.grid.str() + ", shares";
        for (int64_t s : shares) what += " " + std::to_string(s);
        INFO(what, ", micro-batch ", micro);
        std::pair<int64_t, int64_t> w = g.grid.windows(shares);
        Batch mine{slice_rows(ids, w.first, w.second), slice_rows(targets, w.first, w.second)};
        GPT model(c, LocalUnits::of_rank(c, part, g.grid.tp_rank), g.tp_or_null());
        double local = accumulate_gradients(mine, micro, batch, [&](const Tensor& i, const Tensor& t, int64_t) {
          return model.loss(i, t);
        });
        Tensor loss = Tensor::from_vector<double>({local}, {1});
        g.dp->all_reduce(loss, ReduceOp::Sum);
        CHECK(test::relative(loss.item(), ref_loss.item()) < 1e-12);
        std::vector<Parameter*> params = model.parameters();
        GradientSync sync(*g.dp, world, g.grid, part, 25 << 20);
        sync.sum(params, part);
        REQUIRE(params.size() == ref.size());
        for (size_t i = 0; i < params.size(); ++i) {
          Tensor gr = params[i]->grad().defined() ? params[i]->grad() : Tensor::zeros(params[i]->value.shape(), c.dtype);
          test::check_same_tensor(gather_logical(*params[i], gr, g.tp_or_null()), ref[i]->grad(), 1e-10,
                                  params[i]->name);
        }
      }
  }
}

TEST_CASE("every rank of every replica measures the same replica speeds and adopts the same shares") {
  Communicator& world = test::world();
  for (int tp : grids_with_replicas(world.size())) {
    test::GridComms g = test::grid_of(tp);
    INFO(g.grid.str());
    // Replica 0 is three times slower, and only in its last tensor-parallel rank: the replica is
    // as slow as that rank.
    const bool slow = g.grid.dp_rank == 0 && g.grid.tp_rank == g.grid.tp - 1;
    std::vector<double> speed(static_cast<size_t>(g.grid.dp), 2.0);
    speed[0] = 2.0 / 3;
    WindowShares shares(g.grid, 8, 0, true, 3);
    CHECK(shares.shares() == std::vector<int64_t>(static_cast<size_t>(g.grid.dp), 8 / g.grid.dp));
    ReplicaView seen;
    for (int step = 0; step < 4; ++step) {
      double ms = static_cast<double>(shares.windows().second) * (slow ? 1.5 : 0.5);
      std::vector<int64_t> decided = speed_shares(shares.view());
      seen = shares.after_step(*g.tp, *g.dp, ms, shares.windows().second, decided);
    }
    for (size_t d = 0; d < speed.size(); ++d) CHECK(seen.speed[d] == doctest::Approx(speed[d]));
    CHECK(shares.shares() == proportional_shares(speed, 8, 0));
    CHECK(shares.shares() != std::vector<int64_t>(speed.size(), 8 / g.grid.dp));
    // The same on every rank, to the bit.
    std::vector<double> mine(seen.speed);
    for (int64_t s : shares.shares()) mine.push_back(static_cast<double>(s));
    const int64_t width = static_cast<int64_t>(mine.size());
    Tensor all = Tensor::empty({world.size(), width}, DType::F64);
    world.all_gather(Tensor::from_vector(mine, {1, width}), all);
    std::vector<double> every = all.to_vector<double>();
    for (int r = 1; r < world.size(); ++r)
      CHECK(std::vector<double>(every.begin() + r * width, every.begin() + (r + 1) * width) ==
            std::vector<double>(every.begin(), every.begin() + width));
    // A policy's shares that do not add up stop every rank alike.
    std::vector<int64_t> bad = shares.shares();
    bad[0] += 1;
    CHECK_THROWS_WITH_AS(shares.after_step(*g.tp, *g.dp, 1.0, shares.windows().second, bad),
                         doctest::Contains("sum to 9 windows"), Error);
    // Nor do windows the replicas did not compute as shared.
    CHECK_THROWS_WITH_AS(shares.after_step(*g.tp, *g.dp, 1.0, shares.windows().second + (g.grid.dp_rank == 0), {}),
                         doctest::Contains("the replicas computed 9 windows of a step of 8"), Error);
  }
}

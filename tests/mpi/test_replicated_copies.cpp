// Every tensor rank of every replica keeps its own copy of each replicated parameter (LayerNorms,
// biases, wpe). On a 3 x 2 grid whose data-parallel sums add in a ring's order (as NCCL's do:
// the order depends on an element's offset in its bucket), a migration mid-run included, the six
// copies stay bitwise one: the gradient sum lays out the replicated parameters alike on every
// slot (parallel/dp/gradient_sync.h). With two replicas (a + b = b + a) or one slot nothing
// would show a difference of layout, hence three replicas of two ranks (run by ctest's mpi_grid6).
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "core/autograd.h"
#include "core/ops/shape_ops.h"
#include "optim/clip.h"
#include "optim/optimizer.h"
#include "parallel/dp/gradient_sync.h"
#include "parallel/dp/micro_batches.h"
#include "parallel/dp/replica_agreement.h"
#include "parallel/tp/repartition.h"
#include "tests/mpi/grid_comms.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/ring_order_communicator.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {

// The replicated parameters' tensors (`what` of each: its gradient, or its value and optimizer
// slots) that differ bitwise from world rank 0's, as "name (world rank r)"; "" when all agree.
// Collective over the world; every rank gets the same answer.
std::string differing_copies(Communicator& world, const std::vector<Parameter*>& params, bool gradients) {
  std::string differ;
  for (const Parameter* p : params) {
    if (!p->replicated() || p->value.numel() == 0) continue;
    std::vector<std::pair<std::string, Tensor>> tensors;
    if (gradients) {
      tensors.push_back({"gradient", p->grad().defined() ? p->grad() : Tensor::zeros(p->value.shape(), p->value.dtype())});
    } else {
      tensors.push_back({"value", p->value});
      for (const auto& [slot, t] : p->state) tensors.push_back({slot, t});
    }
    for (const auto& [what, t] : tensors) {
      const int64_t n = t.numel();
      Tensor all = Tensor::empty({world.size() * n}, t.dtype());
      world.all_gather(view_as(t.detach(), {n}).clone(), all);
      const char* bytes = static_cast<const char*>(all.raw());
      const size_t block = t.nbytes();
      for (int r = 1; r < world.size(); ++r)
        if (std::memcmp(bytes, bytes + r * block, block) != 0)
          differ += (differ.empty() ? "" : ", ") + p->name + " " + what + " (world rank " + std::to_string(r) + ")";
    }
  }
  return differ;
}

}  // namespace

TEST_CASE("a 3 x 2 grid summing in a ring's order keeps every replicated parameter bitwise the same on all six ranks, through a migration (f32)") {
  Communicator& world = test::world();
  if (world.size() != 6) return;  // 3 replicas of 2 tensor ranks
  GPTConfig c = test::tiny_config(DType::F32);
  const int steps = 8, batch = 6;
  const double lr = 1e-2, clip = 0.5;
  test::GridComms g = test::grid_of(2);
  REQUIRE(g.grid.dp == 3);
  test::RingOrderCommunicator ring(*g.dp);
  // Each replica starts from another partition: every slot's buckets hold other unit rows.
  std::vector<std::pair<std::string, Partition>> parts = test::partitions(c, 2);
  Partition current = parts[g.grid.dp_rank % parts.size()].second;
  GPT model(c, LocalUnits::of_rank(c, current, g.grid.tp_rank), g.tp.get());
  AdamW opt({0.9, 0.999, 1e-8, 0.01});
  std::vector<Parameter*> params = model.parameters();
  GradientSync sync(ring, world, g.grid, current, 1024, {}, 0);  // small buckets: several per slot
  for (int s = 0; s < steps; ++s) {
    INFO("step ", s);
    if (s == 3 && g.grid.dp_rank == 0) {  // replica 0 alone moves units: its buckets change
      Partition to = parts[(g.grid.dp_rank + 2) % parts.size()].second;
      repartition(params, current, to, opt.slot_names(), g.tp.get());
      current = to;
    }
    Tensor ids = test::tokens(batch, 7, 60 + s), targets = test::tokens(batch, 7, 90 + s);
    auto [first, share] = g.grid.windows(batch);
    accumulate_gradients({slice_rows(ids, first, share), slice_rows(targets, first, share)}, 0, batch,
                         [&](const Tensor& i, const Tensor& t, int64_t) { return model.loss(i, t); });
    sync.sum(params, current);
    CHECK(sync.stats().partitions_changed == (s == 0 || s == 3));
    std::string differ = differing_copies(world, params, true);
    INFO("gradients that differ: ", differ);
    REQUIRE(differ.empty());  // every rank decides alike (the comparison is the world's)
    double norm = sync.same_on_every_replica(test::global_grad_norm(params, g.tp.get()));
    clip_to_norm(params, clip, norm);
    opt.step(params, lr);
    for (Parameter* p : params) p->value.zero_grad();
    differ = differing_copies(world, params, false);
    INFO("values or optimizer slots that differ: ", differ);
    REQUIRE(differ.empty());
  }
  CHECK(sync.stats().units_exchanged > 0);  // the replicas' partitions differ to the end
  CHECK_NOTHROW(check_replica_weights(world, g.grid, params));
}

// Each replica of a data x tensor parallel grid keeps its own partition (parallel/dp/gradient_sync.h):
// partitions that differ between replicas, local orders that differ, a migration in one replica
// mid-run and units skipped by some replicas only still give one model, trained on the global batch.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>

#include "core/autograd.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape_ops.h"
#include "optim/clip.h"
#include "optim/optimizer.h"
#include "parallel/balance/active_units.h"
#include "parallel/dp/gradient_sync.h"
#include "parallel/dp/grid.h"
#include "parallel/dp/micro_batches.h"
#include "parallel/dp/replica_agreement.h"
#include "parallel/tp/repartition.h"
#include "parallel/tp/unit_gather.h"
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

// The grids of the world with several replicas: pure data parallel, and 2 x (n / 2).
std::vector<int> replicated_grids(int n) {
  std::vector<int> tps;
  if (n > 1) tps.push_back(1);
  if (n > 2 && n % 2 == 0) tps.push_back(2);
  return tps;
}

// Puts the local units of every group in reverse order on this rank (the same units: another
// local order, as migrations and resizing leave behind).
void reverse_local_orders(std::vector<Parameter*>& params) {
  std::set<std::string> done;
  for (Parameter* p : params)
    if (!p->replicated() && p->units.size() > 1 && done.insert(p->group().name).second)
      reorder_units(group_parameters(params, p->group().name), std::vector<int64_t>(p->units.rbegin(), p->units.rend()));
}

std::string mlp_group(const GPTConfig& c, int layer) {
  for (const UnitGroup& g : unit_groups(c))
    if (g.kind == UnitKind::Mlp && g.layer == layer) return g.name;
  FAIL("no MLP group of layer ", layer);
  return "";
}

// Skips `skip` (units of `group` this rank holds) on this rank: they go last and are made inactive.
void skip_units(std::vector<Parameter*>& params, const std::string& group, const std::vector<int64_t>& skip) {
  std::vector<Parameter*> gp = group_parameters(params, group);
  if (gp.empty()) return;
  std::vector<int64_t> kept, skipped;
  for (int64_t u : gp[0]->units) (std::count(skip.begin(), skip.end(), u) ? skipped : kept).push_back(u);
  if (skipped.empty()) return;
  int64_t active = static_cast<int64_t>(kept.size());
  kept.insert(kept.end(), skipped.begin(), skipped.end());
  reorder_units(gp, kept);
  set_active_units(gp, active);
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& kind) {
  if (kind == "sgd") return std::make_unique<SGD>(SGDOptions{});
  return std::make_unique<AdamW>(AdamWOptions{});
}

}  // namespace

TEST_CASE("replicas whose partitions and local orders differ sum every unit once: one process's loss, gradients and norm (f64)") {
  Communicator& world = test::world();
  GPTConfig c = test::tiny_config(DType::F64);
  const int64_t batch = 8;
  Tensor ids = tokens(batch, 7, 3), targets = tokens(batch, 7, 4);
  test::OneProcess one(c, ids, targets);
  Tensor ref_loss = one.loss;
  const std::vector<Parameter*>& ref = one.params;
  const double ref_norm = one.norm;
  for (int tp : replicated_grids(world.size())) {
    GridComms g = grid_of(tp);
    auto [first, share] = g.grid.windows(batch);
    Batch mine{slice_rows(ids, first, share), slice_rows(targets, first, share)};
    // Replica d holds the d+1-th of (even, proportional, zero units): they differ between
    // replicas, and one holds ranks with none of some groups. Each replica gives the sum only its
    // own: the first sum learns the others'.
    std::vector<std::pair<std::string, Partition>> parts = test::partitions(c, tp);
    const Partition& part = parts[(g.grid.dp_rank + 1) % parts.size()].second;
    for (int64_t micro : {int64_t{0}, share / 2}) {
      INFO(g.grid.str(), ", micro-batch ", micro);
      GPT model(c, LocalUnits::of_rank(c, part, g.grid.tp_rank), g.tp_or_null());
      std::vector<Parameter*> params = model.parameters();
      if (g.grid.dp_rank % 2 == 1) reverse_local_orders(params);
      double local = accumulate_gradients(mine, micro, batch, [&](const Tensor& i, const Tensor& t, int64_t) {
        return model.loss(i, t);
      });
      Tensor loss = Tensor::from_vector<double>({local}, {1});
      g.dp->all_reduce(loss, ReduceOp::Sum);
      CHECK(relative(loss.item(), ref_loss.item()) < 1e-12);
      GradientSync sync(*g.dp, world, g.grid, part, 4096);
      sync.sum(params, part);
      const GradientSyncStats& st = sync.stats();
      CHECK(st.partitions_changed);  // the first sum learns the other replicas' partitions
      CHECK((st.units_exchanged > 0) == (tp > 1));
      // Every byte of the exchange counted: no more than a ring all-reduce of the same gradients.
      CHECK(st.ring_bytes > 0);
      CHECK(static_cast<double>(st.bytes_sent) <= 1.1 * static_cast<double>(st.ring_bytes));
      for (size_t i = 0; i < params.size(); ++i) {
        Tensor gr = params[i]->grad().defined() ? params[i]->grad() : Tensor::zeros(params[i]->value.shape(), c.dtype);
        check_same_tensor(gather_logical(*params[i], gr, g.tp_or_null()), ref[i]->grad(), 1e-10, params[i]->name);
      }
      CHECK(relative(test::global_grad_norm(params, g.tp_or_null()), ref_norm) < 1e-10);
    }
  }
}

TEST_CASE("a migration in one replica mid-run: the curve and the weights equal one process's (f32)") {
  Communicator& world = test::world();
  if (world.size() != 4) return;  // 2 replicas of 2 ranks
  GPTConfig c = test::tiny_config(DType::F32);
  std::vector<UnitGroup> groups = unit_groups(c);
  const int steps = 6, batch = 4;
  const double lr = 3e-3, clip = 0.05;  // every step clipped
  auto data = [](int s) { return std::make_pair(tokens(batch, 7, 50 + s), tokens(batch, 7, 80 + s)); };
  GPT single(c);
  AdamW ref_opt({0.9, 0.999, 1e-8, 0.01});
  std::vector<Parameter*> ref = single.parameters();
  std::vector<double> ref_loss;
  for (int s = 0; s < steps; ++s) {
    auto [ids, targets] = data(s);
    Tensor loss = single.loss(ids, targets);
    loss.backward();
    ref_loss.push_back(loss.item());
    clip_to_norm(ref, clip, test::global_grad_norm(ref, nullptr));
    ref_opt.step(ref, lr);
    for (Parameter* p : ref) p->value.zero_grad();
  }
  GridComms g = grid_of(2);
  Partition current = Partition::even(groups, 2);
  GPT model(c, LocalUnits::of_rank(c, current, g.grid.tp_rank), g.tp.get());
  AdamW opt({0.9, 0.999, 1e-8, 0.01});
  std::vector<Parameter*> params = model.parameters();
  GradientSync sync(*g.dp, world, g.grid, current, 4096, {}, 1);  // the weights checked at every sum
  for (int s = 0; s < steps; ++s) {
    INFO("step ", s);
    if (s == 2 && g.grid.dp_rank == 0) {  // replica 0 alone moves units (empty ranks included)
      Partition to = test::partitions(c, 2)[2].second;
      repartition(params, current, to, opt.slot_names(), g.tp.get());
      current = to;
    }
    auto [ids, targets] = data(s);
    auto [first, share] = g.grid.windows(batch);
    double local = accumulate_gradients({slice_rows(ids, first, share), slice_rows(targets, first, share)}, 1, batch,
                                        [&](const Tensor& i, const Tensor& t, int64_t) { return model.loss(i, t); });
    Tensor loss = Tensor::from_vector<double>({local}, {1});
    g.dp->all_reduce(loss, ReduceOp::Sum);
    CHECK(relative(loss.item(), ref_loss[s]) < 1e-4);
    sync.sum(params, current);
    CHECK(sync.stats().partitions_changed == (s == 0 || s == 2));  // the first sum, and after the move
    CHECK((sync.stats().units_exchanged > 0) == (s >= 2));
    // The replicas' partitions differ, and with them the rounding of the norm: all clip by one.
    double norm = sync.same_on_every_replica(test::global_grad_norm(params, g.tp.get()));
    CHECK(norm > clip);
    clip_to_norm(params, clip, norm);
    opt.step(params, lr);
    for (Parameter* p : params) p->value.zero_grad();
  }
  // Adam divides by the root of v: in f32 the weights of small gradients carry more of the sums'
  // rounding than the loss does.
  for (size_t i = 0; i < params.size(); ++i)
    check_same_tensor(gather_logical(*params[i], params[i]->value, g.tp.get()), ref[i]->value, 1e-3, params[i]->name);
  CHECK_NOTHROW(check_replica_weights(world, g.grid, params));
}

namespace {

// Each replica d skips skipped_by(d) (the units of `group` its ranks hold) for one step of every
// grid with several replicas, its group's partition from partition_of(tp): every unit's gradient
// is the sum over the replicas of what each computed (zeros from those that skipped it), every
// replica applies the same update (f64, AdamW and SGD), and a unit every replica skipped
// (`frozen`) stays as it was while the others move.
void check_skipping_replicas(const std::string& group, const std::function<std::vector<int64_t>(int)>& skipped_by,
                             const std::vector<int64_t>& frozen, const std::function<Partition(int)>& partition_of) {
  Communicator& world = test::world();
  GPTConfig c = test::tiny_config(DType::F64);
  const int64_t batch = 4;
  const double lr = 1e-2;
  Tensor ids = tokens(batch, 7, 5), targets = tokens(batch, 7, 6);
  for (int tp : replicated_grids(world.size())) {
    GridComms g = grid_of(tp);
    INFO(g.grid.str());
    // The rule, on one process: the sum over replicas of each one's gradient with its own skips.
    std::vector<Tensor> expected;
    for (int d = 0; d < g.grid.dp; ++d) {
      GPT one(c);
      std::vector<Parameter*> ps = one.parameters();
      skip_units(ps, group, skipped_by(d));
      Grid other = g.grid;
      other.dp_rank = d;
      auto [first, share] = other.windows(batch);
      accumulate_gradients({slice_rows(ids, first, share), slice_rows(targets, first, share)}, 0, batch,
                           [&](const Tensor& i, const Tensor& t, int64_t) { return one.loss(i, t); });
      for (size_t i = 0; i < ps.size(); ++i) {
        Tensor gr = gather_logical(*ps[i], ps[i]->grad(), nullptr);
        if (expected.size() <= i)
          expected.push_back(gr.clone());
        else
          expected[i] = add(expected[i], gr);
      }
    }
    for (const std::string kind : {"adamw", "sgd"}) {
      INFO(kind);
      // ... and its update: every unit some replica computed, the frozen ones left alone.
      GPT rule(c);
      std::vector<Parameter*> rp = rule.parameters();
      skip_units(rp, group, frozen);
      for (size_t i = 0; i < rp.size(); ++i) rp[i]->value.set_grad(local_rows(*rp[i], expected[i]));
      make_optimizer(kind)->step(rp, lr);

      Partition part = partition_of(tp);
      GPT model(c, LocalUnits::of_rank(c, part, g.grid.tp_rank), g.tp_or_null());
      std::vector<Parameter*> params = model.parameters();
      std::vector<Tensor> before;
      for (Parameter* p : params) before.push_back(gather_logical(*p, p->value, g.tp_or_null()).clone());
      skip_units(params, group, skipped_by(g.grid.dp_rank));
      auto [first, share] = g.grid.windows(batch);
      accumulate_gradients({slice_rows(ids, first, share), slice_rows(targets, first, share)}, 0, batch,
                           [&](const Tensor& i, const Tensor& t, int64_t) { return model.loss(i, t); });
      GradientSync sync(*g.dp, world, g.grid, part);
      sync.sum(params, part);
      for (size_t i = 0; i < params.size(); ++i)
        check_same_tensor(gather_logical(*params[i], params[i]->grad(), g.tp_or_null()), expected[i], 1e-10,
                          params[i]->name + " gradient");
      make_optimizer(kind)->step(params, lr);
      CHECK_NOTHROW(check_replica_weights(world, g.grid, params));  // the same weights in every replica
      for (size_t i = 0; i < params.size(); ++i) {
        Tensor now = gather_logical(*params[i], params[i]->value, g.tp_or_null());
        check_same_tensor(now, gather_logical(*rp[i], rp[i]->value, nullptr), 1e-10, params[i]->name + " value");
        if (params[i]->replicated() || params[i]->group().name != group) continue;
        int64_t r = params[i]->unit_rows();
        for (int64_t u = 0; u < params[i]->group().units; ++u) {
          INFO(params[i]->name, " unit ", u);
          const bool still = std::count(frozen.begin(), frozen.end(), u) > 0;
          CHECK((slice_rows(now, u * r, r).to_vector<double>() == slice_rows(before[i], u * r, r).to_vector<double>()) ==
                still);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("a unit skipped by one replica gets the others' gradient and the same update everywhere; one skipped by all stays frozen (f64, AdamW and SGD)") {
  // Replica 0 skips MLP units 1 and 3 of layer 0, the others unit 3 alone: unit 1 comes from the
  // other replicas, unit 3 from none.
  check_skipping_replicas(
      mlp_group(test::tiny_config(DType::F64), 0),
      [](int replica) { return replica == 0 ? std::vector<int64_t>{1, 3} : std::vector<int64_t>{3}; }, {3},
      [](int tp) { return Partition::even(unit_groups(test::tiny_config(DType::F64)), tp); });
}

TEST_CASE("consecutive units that one replica skips and the others compute all get the others' update (f64, AdamW and SGD)") {
  // Replica 0 skips MLP units 1 and 2 of layer 0, held by one rank (every replica's rank 0 holds
  // the whole layer-0 MLP): on that rank they are adjacent rows at the end of its block, which
  // the optimizer updates from the others' gradient as one run of extra rows.
  const GPTConfig c = test::tiny_config(DType::F64);
  check_skipping_replicas(
      mlp_group(c, 0), [](int replica) { return replica == 0 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{}; },
      {}, [&](int tp) {
        std::vector<UnitGroup> groups = unit_groups(c);
        Partition p = Partition::even(groups, tp);
        apply_tp_assignment(p, groups, "mlp@0=0-3" + std::string(tp - 1, '|'));
        return p;
      });
}

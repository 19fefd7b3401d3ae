// Priority resizing under tensor parallelism equals one process skipping the same units: losses,
// every gradient, the optimizer's frozen and moving rows, also when skipped units migrate.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/autograd.h"
#include "core/random.h"
#include "optim/optimizer.h"
#include "parallel/balance/active_units.h"
#include "parallel/tp/repartition.h"
#include "parallel/tp/unit_gather.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {

Tensor tokens(uint64_t seed) {
  std::vector<int32_t> v(2 * 8);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(rng::uniform(i, 5, seed) * 37);
  return Tensor::from_vector(v, {2, 8});
}

// The units skipped in each group, wherever they live: at 4 ranks an even partition leaves some
// ranks with no active head in layer 0 at all.
const std::map<std::string, std::set<int64_t>>& skipped_units() {
  static const std::map<std::string, std::set<int64_t>> s = {
      {"h.0.head", {1, 2}}, {"h.1.head", {3}}, {"h.1.mlp", {0, 3}}};
  return s;
}

// Every group's local units active-first (the skipped ones last, as the resizer orders them).
void skip(GPT& m) {
  std::vector<Parameter*> params = m.parameters();
  for (const auto& [group, skipped] : skipped_units()) {
    std::vector<Parameter*> ps = group_parameters(params, group);
    REQUIRE(!ps.empty());
    std::vector<int64_t> order;
    for (int64_t u : ps.front()->units)
      if (!skipped.count(u)) order.push_back(u);
    int64_t active = static_cast<int64_t>(order.size());
    for (int64_t u : ps.front()->units)
      if (skipped.count(u)) order.push_back(u);
    reorder_units(ps, order);
    set_active_units(ps, active);
  }
}

// Every group back to all its units active (before a repartition, which keeps the local order).
void unskip(GPT& m) {
  for (const auto& entry : skipped_units()) set_active_units(group_parameters(m.parameters(), entry.first), -1);
}

// A tensor laid out like p.value, in logical unit order (all ranks' rows, whatever the order).
Tensor logical(const Parameter& p, const Tensor& local, Communicator* comm) {
  return gather_logical(p, local.defined() ? local : Tensor::zeros(p.value.shape(), p.value.dtype()), comm);
}

// Element-wise |a - b| <= 1e-12 + 1e-10 |b|: the same sums in another order, nothing more.
void check_same(const Tensor& a, const Tensor& b, const std::string& what) {
  REQUIRE(a.shape() == b.shape());
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  size_t bad = 0, worst_at = 0;
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double d = std::abs(x[i] - y[i]);
    if (d > 1e-12 + 1e-10 * std::abs(y[i])) ++bad;
    if (d > worst) worst = d, worst_at = i;
  }
  INFO(what, ": ", bad, " entries differ, the most at ", worst_at, " (", x.empty() ? 0.0 : x[worst_at], " vs ",
       y.empty() ? 0.0 : y[worst_at], ")");
  CHECK(bad == 0);
}

// Every weight and optimizer slot of the tensor-parallel model `pk` (gathered over `comm`) equals
// the one process's `p1`.
void check_same_weights_and_slots(const std::vector<Parameter*>& p1, const std::vector<Parameter*>& pk,
                                  const std::vector<std::string>& slots, Communicator& comm) {
  for (size_t i = 0; i < p1.size(); ++i) {
    check_same(logical(*pk[i], pk[i]->value, &comm), logical(*p1[i], p1[i]->value, nullptr), p1[i]->name);
    for (const std::string& s : slots)
      check_same(logical(*pk[i], pk[i]->state.at(s), &comm), logical(*p1[i], p1[i]->state.at(s), nullptr),
                 p1[i]->name + "." + s);
  }
}

}  // namespace

TEST_CASE("resized tensor parallelism equals one process skipping the same units (f64), every MLP kind") {
  Communicator& comm = test::world();
  for (const std::string& mlp : test::mlp_kinds()) {
    INFO(mlp, " MLP");
    GPTConfig c = test::tiny_config(DType::F64, mlp);
    std::vector<UnitGroup> groups = unit_groups(c);
    std::vector<double> w(comm.size());
    for (int r = 0; r < comm.size(); ++r) w[r] = r == 0 ? 3.0 : 1.0 + r % 2;
    for (const auto& [name, part] : std::vector<std::pair<std::string, Partition>>{
             {"even", Partition::even(groups, comm.size())}, {"proportional", Partition::proportional(groups, w)}}) {
      std::string what = "partition " + name + ": " + part.str();  // (clang: no structured bindings in INFO's lambda)
      INFO(what);
      GPT one(c), tp(c, LocalUnits::of_rank(c, part, comm.rank()), &comm);
      AdamW opt_one({0.9, 0.999, 1e-8, 0.1}), opt_tp({0.9, 0.999, 1e-8, 0.1});
      std::vector<Parameter*> p1 = one.parameters(), pk = tp.parameters();
      REQUIRE(p1.size() == pk.size());
      for (int step = 0; step < 4; ++step) {
        if (step == 1) {  // after a step with every unit: the optimizer state exists
          skip(one);
          skip(tp);
        }
        Tensor l1 = one.loss(tokens(step), tokens(100 + step)), lk = tp.loss(tokens(step), tokens(100 + step));
        INFO("step ", step, ": ", lk.item(), " vs ", l1.item());
        CHECK(std::abs(lk.item() - l1.item()) <= 1e-12 * std::abs(l1.item()));
        l1.backward();
        lk.backward();
        for (size_t i = 0; i < p1.size(); ++i)
          check_same(logical(*pk[i], pk[i]->grad(), &comm), logical(*p1[i], p1[i]->grad(), nullptr),
                     "gradient of " + p1[i]->name);
        opt_one.step(p1, 1e-2);
        opt_tp.step(pk, 1e-2);
        for (Parameter* p : p1) p->value.zero_grad();
        for (Parameter* p : pk) p->value.zero_grad();
      }
      // The skipped rows stayed frozen on every rank as in the one process, weights and slots.
      check_same_weights_and_slots(p1, pk, opt_one.slot_names(), comm);
    }
  }
}

TEST_CASE("skipped units that migrate stay skipped and frozen: resized training with a migration mid-run equals one process (f64)") {
  Communicator& comm = test::world();
  const int n = comm.size();
  GPTConfig c = test::tiny_config(DType::F64);
  std::vector<UnitGroup> groups = unit_groups(c);
  // Every skipped unit, and unit 0 of every group, changes owner at the migration.
  Partition start = Partition::even(groups, n), moved = start;
  for (const UnitGroup& g : groups) {
    std::vector<int> owners = start.owners(g.name);
    auto skipped = skipped_units().find(g.name);
    for (int64_t u = 0; u < g.units; ++u)
      if (u == 0 || (skipped != skipped_units().end() && skipped->second.count(u))) owners[u] = (owners[u] + 1) % n;
    moved.set_owners(g.name, owners);
  }
  GPT one(c), tp(c, LocalUnits::of_rank(c, start, comm.rank()), &comm);
  AdamW opt_one({0.9, 0.999, 1e-8, 0.1}), opt_tp({0.9, 0.999, 1e-8, 0.1});
  for (int step = 0; step < 5; ++step) {
    INFO("step ", step);
    if (step == 1) {  // after a step with every unit: the optimizer state exists
      skip(one);
      skip(tp);
    }
    if (step == 3) {  // the skipped units move, with their optimizer state, and stay skipped
      unskip(tp);
      repartition(tp.parameters(), start, moved, opt_tp.slot_names(), &comm);
      skip(tp);
    }
    Tensor l1 = one.loss(tokens(step), tokens(100 + step)), lk = tp.loss(tokens(step), tokens(100 + step));
    INFO(lk.item(), " vs ", l1.item());
    CHECK(std::abs(lk.item() - l1.item()) <= 1e-12 * std::abs(l1.item()));
    l1.backward();
    lk.backward();
    opt_one.step(one.parameters(), 1e-2);
    opt_tp.step(tp.parameters(), 1e-2);
    for (Parameter* p : one.parameters()) p->value.zero_grad();
    for (Parameter* p : tp.parameters()) p->value.zero_grad();
  }
  check_same_weights_and_slots(one.parameters(), tp.parameters(), opt_one.slot_names(), comm);
}

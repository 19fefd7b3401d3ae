// Migration mid-run against the single process: the same losses, the same gradients at every
// step and the same weights and optimizer state at the end, whichever way the units travel; and
// a repartition copies every moved row exactly, by either transfer.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "core/autograd.h"
#include "optim/optimizer.h"
#include "nn/unit_costs.h"
#include "nn/units.h"
#include "parallel/balance/balancer.h"
#include "parallel/tp/repartition.h"
#include "parallel/tp/unit_gather.h"
#include "parallel/tp/unit_rows.h"
#include "tests/mpi/counting_communicator.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {

const TransferMethod kTransfers[] = {TransferMethod::PointToPoint, TransferMethod::AllToAllV};

// Everything a parameter holds, as logical tensors (all units in id order): value, m, v.
std::vector<Tensor> logical_state(const Parameter& p, Communicator* comm) {
  std::vector<Tensor> out{gather_logical(p, p.value, comm)};
  for (const char* slot : {"m", "v"}) out.push_back(gather_logical(p, p.state.at(slot), comm));
  return out;
}

}  // namespace

TEST_CASE("training with migrations mid-run equals the single process in losses and gradients and Adam state (f64), every MLP kind") {
  Communicator& comm = test::world();
  int n = comm.size();
  for (const std::string& mlp : test::mlp_kinds()) {
    INFO(mlp, " MLP");
    GPTConfig c = test::tiny_config(DType::F64, mlp);
    std::vector<UnitGroup> groups = unit_groups(c);
    const int steps = 10;
    auto batch = [](int s) { return std::make_pair(test::tokens(3, 7, s), test::tokens(3, 7, 1000 + s)); };

    // The single process: losses, every gradient at every step, and the final state.
    GPT single(c);
    AdamW ref_opt({0.9, 0.999, 1e-8, 0.01});
    std::vector<Parameter*> ref = single.parameters();
    std::vector<double> ref_loss;
    std::vector<std::vector<Tensor>> ref_grads;
    for (int s = 0; s < steps; ++s) {
      auto [ids, targets] = batch(s);
      Tensor loss = single.loss(ids, targets);
      loss.backward();
      ref_loss.push_back(loss.item());
      ref_grads.emplace_back();
      for (Parameter* p : ref) ref_grads.back().push_back(p->grad().clone());
      ref_opt.step(ref, 3e-3);
      for (Parameter* p : ref) p->value.zero_grad();
    }

    // Moves: random owners, a partition with empty ranks, everything off the last rank, random again.
    Partition start = Partition::even(groups, n), empty_last = start;
    for (const UnitGroup& g : groups) {
      std::vector<int> owners(g.units);
      for (int64_t u = 0; u < g.units; ++u) owners[u] = static_cast<int>(u % std::max(1, n - 1));
      empty_last.set_owners(g.name, owners);
    }
    std::map<int, Partition> moves{{2, test::random_partition(c, n, 1)},
                                   {4, test::partitions(c, n)[2].second},
                                   {6, empty_last},
                                   {8, test::random_partition(c, n, 2)}};

    std::vector<std::vector<Tensor>> final_by_method;
    for (TransferMethod method : kTransfers) {
      INFO("transfer ", std::string(method_name(method)));
      Partition current = start;
      GPT tp(c, LocalUnits::of_rank(c, start, comm.rank()), &comm);
      AdamW opt({0.9, 0.999, 1e-8, 0.01});
      std::vector<Parameter*> params = tp.parameters();
      REQUIRE(params.size() == ref.size());
      for (int s = 0; s < steps; ++s) {
        INFO("step ", s);
        if (moves.count(s)) {
          int64_t sent = repartition(params, current, moves.at(s), opt.slot_names(), &comm, method);
          CHECK(sent == test::expected_move(c, current, moves.at(s), 2).bytes);
          current = moves.at(s);
        }
        auto [ids, targets] = batch(s);
        Tensor loss = tp.loss(ids, targets);
        CHECK(test::relative(loss.item(), ref_loss[s]) < 1e-12);
        loss.backward();
        for (size_t i = 0; i < params.size(); ++i) {
          Tensor g = params[i]->grad().defined() ? params[i]->grad() : Tensor::zeros(params[i]->value.shape(), c.dtype);
          test::check_same_tensor(gather_logical(*params[i], g, &comm), ref_grads[s][i], 1e-10,
                                  params[i]->name + " gradient");
        }
        opt.step(params, 3e-3);
        for (Parameter* p : params) p->value.zero_grad();
      }
      std::vector<Tensor> all;
      for (size_t i = 0; i < params.size(); ++i) {
        std::vector<Tensor> mine = logical_state(*params[i], &comm);
        test::check_same_tensor(mine[0], ref[i]->value, 1e-10, params[i]->name + " value");
        test::check_same_tensor(mine[1], ref[i]->state.at("m"), 1e-9, params[i]->name + ".m");
        test::check_same_tensor(mine[2], ref[i]->state.at("v"), 1e-9, params[i]->name + ".v");
        all.insert(all.end(), mine.begin(), mine.end());
      }
      final_by_method.push_back(all);
    }
    // The transfer only carries bytes: both ways end in the very same state.
    for (size_t k = 0; k < final_by_method[0].size(); ++k)
      CHECK(final_by_method[0][k].to_vector<double>() == final_by_method[1][k].to_vector<double>());
  }
}

TEST_CASE("a repartition puts every moved row of weights and Adam state exactly where it belongs") {
  Communicator& comm = test::world();
  int n = comm.size();
  GPTConfig c = test::tiny_config(DType::F32);
  std::vector<UnitGroup> groups = unit_groups(c);
  Partition from = test::partitions(c, n)[1].second, to = test::random_partition(c, n, 7);
  for (TransferMethod method : kTransfers) {
    INFO("transfer ", std::string(method_name(method)));
    GPT tp(c, LocalUnits::of_rank(c, from, comm.rank()), &comm);
    AdamW opt({});
    std::vector<Parameter*> params = tp.parameters();
    tp.loss(test::tokens(2, 8, 1), test::tokens(2, 8, 2)).backward();
    opt.step(params, 1e-2);  // non-zero m and v
    for (Parameter* p : params) p->value.zero_grad();
    std::vector<std::vector<Tensor>> before;
    for (Parameter* p : params) before.push_back(logical_state(*p, &comm));

    test::CountingCommunicator counted(comm);
    repartition(params, from, to, opt.slot_names(), &counted, method);
    bool p2p = method == TransferMethod::PointToPoint;  // the forced way, and no other
    CHECK(counted.count(p2p ? "send_recv" : "all_to_all_v") == 1);
    CHECK(counted.count(p2p ? "all_to_all_v" : "send_recv") == 0);
    for (size_t i = 0; i < params.size(); ++i) {
      const Parameter& p = *params[i];
      INFO(p.name);
      if (p.replicated()) continue;
      std::vector<int64_t> held = p.units;
      std::sort(held.begin(), held.end());
      CHECK(held == to.units_of(p.group().name, comm.rank()));
      std::vector<Tensor> local{p.value, p.state.at("m"), p.state.at("v")};
      for (size_t k = 0; k < local.size(); ++k)
        CHECK(local[k].to_vector<float>() == take_unit_rows(p, before[i][k], p.units).to_vector<float>());
    }
  }
}

TEST_CASE("a move the closed loop undoes restores every weight and Adam slot: the curve equals one process's (f64)") {
  Communicator& comm = test::world();
  const int n = comm.size();
  GPTConfig c = test::tiny_config(DType::F64);
  const int steps = 16;
  auto batch = [](int s) { return std::make_pair(test::tokens(3, 7, s), test::tokens(3, 7, 1000 + s)); };

  GPT single(c);
  AdamW ref_opt({0.9, 0.999, 1e-8, 0.01});
  std::vector<Parameter*> ref = single.parameters();
  std::vector<double> ref_loss;
  for (int s = 0; s < steps; ++s) {
    auto [ids, targets] = batch(s);
    Tensor loss = single.loss(ids, targets);
    loss.backward();
    ref_loss.push_back(loss.item());
    ref_opt.step(ref, 3e-3);
    for (Parameter* p : ref) p->value.zero_grad();
  }

  // Injected step times, the same on every rank: the last rank runs at 1/n speed from step 2;
  // once units have moved, every rank but the last waits 40 ms longer every step (the move made
  // things worse), so the loop must move them back. (40 ms more wait on every rank would be a
  // slower link, which no move causes or cures: monitor.h's step_ms_of.)
  const Partition start = Partition::even(unit_groups(c), n);
  GPT tp(c, LocalUnits::of_rank(c, start, comm.rank()), &comm);
  AdamW opt({0.9, 0.999, 1e-8, 0.01});
  std::vector<Parameter*> params = tp.parameters();
  BalanceOptions o;
  o.policy = "migrate";
  CommCostModel free;
  free.fits["p2p"] = {0.0, 0.0};
  Balancer balancer(comm, gpt_model_costs(c, {3, 7, 2}), start, free, o);
  const double base = balancer.work_of(0) / 10.0;  // work per ms that runs an even share in 10 ms
  std::string events;
  for (int s = 0; s < steps; ++s) {
    INFO("step ", s);
    auto [ids, targets] = batch(s);
    Tensor loss = tp.loss(ids, targets);
    CHECK(test::relative(loss.item(), ref_loss[s]) < 1e-12);
    loss.backward();
    opt.step(params, 3e-3);
    for (Parameter* p : params) p->value.zero_grad();
    const bool moved = !(balancer.partition() == start);
    std::vector<RankReport> reports;
    for (int r = 0; r < n; ++r) {
      const double speed = (r == n - 1 && s >= 2) ? 1.0 / n : 1.0, work = balancer.work_of(r);
      reports.push_back({work / (speed * base), moved && r != n - 1 ? 40.0 : 0.0, work, balancer.unit_counts(r)});
    }
    BalanceStep b = balancer.after_step(s + 1, reports, params, opt.slot_names());
    if (!b.trial.empty()) events += (events.empty() ? "" : " ") + b.trial;
  }
  CHECK(events == "try undone");
  CHECK(balancer.partition() == start);
  for (size_t i = 0; i < params.size(); ++i) {
    test::check_same_tensor(gather_logical(*params[i], params[i]->value, &comm), ref[i]->value, 1e-10,
                            params[i]->name + " value");
    for (const char* slot : {"m", "v"})
      test::check_same_tensor(gather_logical(*params[i], params[i]->state.at(slot), &comm), ref[i]->state.at(slot),
                              1e-9, params[i]->name + "." + slot);
  }
}

// Batch chunks whose tensor-parallel all-reduces overlap (GPT::set_tp_chunks) on several ranks:
// loss and every gradient equal the single process's for uneven partitions, with dropout, through
// the step clock; the all-reduces of the forward and of the backward are started ones; migration
// mid-run stays lossless; micro-steps and chunks together give the whole batch's gradients.
#include <doctest/doctest.h>

#include "core/autograd.h"
#include "core/ops/shape_ops.h"
#include "optim/optimizer.h"
#include "parallel/balance/step_clock.h"
#include "parallel/dp/micro_batches.h"
#include "parallel/tp/repartition.h"
#include "parallel/tp/unit_gather.h"
#include "tests/mpi/counting_communicator.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {

GPTConfig with_dropout(const std::string& mlp) {
  GPTConfig c = test::tiny_config(DType::F64, mlp);
  c.dropout = 0.3;
  return c;
}

std::vector<Tensor> gradients(GPT& model, Communicator* comm) {
  std::vector<Tensor> out;
  for (Parameter* p : model.parameters()) {
    Tensor g = p->grad().defined() ? p->grad() : Tensor::zeros(p->value.shape(), p->value.dtype());
    out.push_back(comm ? gather_logical(*p, g, comm) : g.clone());
  }
  return out;
}

void check_gradients(const std::vector<Tensor>& got, const std::vector<Tensor>& ref, GPT& model) {
  std::vector<Parameter*> params = model.parameters();
  REQUIRE(got.size() == ref.size());
  for (size_t i = 0; i < got.size(); ++i) test::check_same_tensor(got[i], ref[i], 1e-10, params[i]->name + " gradient");
}

}  // namespace

TEST_CASE("chunks equal the single process (f64, dropout) on every partition and MLP kind, all-reduces started") {
  Communicator& comm = test::world();
  for (const std::string& mlp : test::mlp_kinds()) {
    GPTConfig c = with_dropout(mlp);
    Tensor ids = test::tokens(3, 7, 1), targets = test::tokens(3, 7, 2);
    GPT single(c);
    single.set_step(4, 1);
    Tensor ref_loss = single.loss(ids, targets);
    ref_loss.backward();
    std::vector<Tensor> ref = gradients(single, nullptr);
    for (const auto& named : test::partitions(c, comm.size())) {
      for (int64_t chunks : {2, 3}) {
        std::string what = mlp + " MLP, partition " + named.first + ", chunks " + std::to_string(chunks);
        INFO(what);
        test::CountingCommunicator counted(comm);
        StepClock clock(counted, SlowdownSchedule{});  // the clock's started all-reduces, as in training
        clock.begin_step(4);
        GPT tp(c, LocalUnits::of_rank(c, named.second, comm.rank()), &clock);
        tp.set_tp_chunks(chunks);
        tp.set_step(4, 1);
        Tensor loss = tp.loss(ids, targets);
        // Every block's two row-split sums, per chunk, are started ones.
        CHECK(counted.count("start_all_reduce") == 2 * c.n_layer * chunks);
        CHECK(test::relative(loss.item(), ref_loss.item()) < 1e-12);
        loss.backward();
        // The column-split layers' input gradients, per chunk: the QKV's and the MLP's (one per
        // column-split matrix: c_fc; c_gate and c_up).
        const int64_t column_layers = mlp == "swiglu" ? 3 : 2;
        CHECK(counted.count("start_all_reduce") == (2 + column_layers) * c.n_layer * chunks);
        check_gradients(gradients(tp, &comm), ref, tp);
      }
    }
  }
}

TEST_CASE("training in chunks with migrations mid-run equals the single process (f64, dropout), losses and gradients") {
  Communicator& comm = test::world();
  const int n = comm.size();
  GPTConfig c = with_dropout("gelu");
  const int steps = 6;
  auto batch = [](int s) { return std::make_pair(test::tokens(3, 7, s), test::tokens(3, 7, 1000 + s)); };
  GPT single(c);
  AdamW ref_opt({0.9, 0.999, 1e-8, 0.01});
  std::vector<double> ref_loss;
  std::vector<std::vector<Tensor>> ref_grads;
  for (int s = 0; s < steps; ++s) {
    single.set_step(static_cast<uint64_t>(s));
    std::pair<Tensor, Tensor> b = batch(s);
    Tensor loss = single.loss(b.first, b.second);
    loss.backward();
    ref_loss.push_back(loss.item());
    ref_grads.push_back(gradients(single, nullptr));
    ref_opt.step(single.parameters(), 3e-3);
    for (Parameter* p : single.parameters()) p->value.zero_grad();
  }
  Partition current = Partition::even(unit_groups(c), n);
  std::map<int, Partition> moves{{2, test::random_partition(c, n, 1)}, {4, test::partitions(c, n)[2].second}};
  GPT tp(c, LocalUnits::of_rank(c, current, comm.rank()), &comm);
  tp.set_tp_chunks(2);
  AdamW opt({0.9, 0.999, 1e-8, 0.01});
  std::vector<Parameter*> params = tp.parameters();
  for (int s = 0; s < steps; ++s) {
    INFO("step ", s);
    if (moves.count(s)) {
      repartition(params, current, moves.at(s), opt.slot_names(), &comm);
      current = moves.at(s);
    }
    tp.set_step(static_cast<uint64_t>(s));
    std::pair<Tensor, Tensor> b = batch(s);
    Tensor loss = tp.loss(b.first, b.second);
    CHECK(test::relative(loss.item(), ref_loss[s]) < 1e-12);
    loss.backward();
    check_gradients(gradients(tp, &comm), ref_grads[s], tp);
    opt.step(params, 3e-3);
    for (Parameter* p : params) p->value.zero_grad();
  }
}

TEST_CASE("micro-steps of chunks give the whole batch's gradients (f64, dropout, uneven partition)") {
  Communicator& comm = test::world();
  GPTConfig c = with_dropout("swiglu");
  const int64_t windows = 6, micro = 3;  // 2 micro-steps of 3 windows, each in chunks of 2 and 1
  Batch b{test::tokens(windows, 7, 3), test::tokens(windows, 7, 4)};
  GPT single(c);
  single.set_step(7);
  single.loss(b.ids, b.targets).backward();
  std::vector<Tensor> ref = gradients(single, nullptr);
  Partition part = test::partitions(c, comm.size())[1].second;
  GPT tp(c, LocalUnits::of_rank(c, part, comm.rank()), &comm);
  tp.set_tp_chunks(2);
  accumulate_gradients(b, micro, windows, [&](const Tensor& ids, const Tensor& targets, int64_t first) {
    tp.set_step(7, static_cast<uint64_t>(first));
    return tp.loss(ids, targets);
  });
  check_gradients(gradients(tp, &comm), ref, tp);
}

// The data-parallel sum's overlap with the backward (parallel/dp/gradient_sync.h): the buckets
// started by the last backward's leaf hook give bitwise the gradients of the sum started after
// the backward, on every grid, with micro-steps and with partitions that differ between
// replicas; with several buckets some start before the backward ends; a wrong guess (another
// gradient exists than at the last sum) is dropped and summed afresh, still bitwise the same. A
// backend whose started all-reduces run in the compute's place (NCCL's, on the compute stream)
// counts none of them as overlapped.
#include <doctest/doctest.h>

#include <memory>

#include "core/ops/shape_ops.h"
#include "parallel/dp/gradient_sync.h"
#include "parallel/dp/micro_batches.h"
#include "tests/mpi/counting_communicator.h"
#include "tests/mpi/grid_comms.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {

// Counts calls like CountingCommunicator, and its started all-reduces say that they run in the
// place of the compute queued after them, as NCCL's do on the compute stream (the sum is MPI's).
class QueuedOnStream : public test::CountingCommunicator {
 public:
  using CountingCommunicator::CountingCommunicator;
  std::unique_ptr<PendingReduce> start_all_reduce(Tensor& t, ReduceOp op) override {
    struct InPlace : PendingReduce {
      std::unique_ptr<PendingReduce> inner;
      bool test() override { return inner->test(); }
      void wait() override { inner->wait(); }
      bool beside_compute() const override { return false; }
    };
    auto p = std::make_unique<InPlace>();
    p->inner = CountingCommunicator::start_all_reduce(t, op);
    return p;
  }
};

// One run of three steps on its own model and sum: the first sum learns the partitions (nothing
// to guess from before it); the second overlaps when `overlap`; the third drops the last
// parameter's gradient everywhere after the backward, so that the guess from the second is wrong.
struct Run {
  std::vector<std::vector<std::vector<double>>> grads;  // per step, per parameter (empty: absent)
  std::vector<GradientSyncStats> stats;
  std::vector<int> started_in_backward;  // all-reduces started when the backward had ended
  std::vector<int> started;              // all-reduces started by the sum's end
};

Run run_steps(test::GridComms& g, const GPTConfig& c, const Partition& part, bool overlap, bool on_stream = false) {
  Communicator& world = test::world();
  const int64_t batch = 8, micro = 2;  // micro-steps of 2 windows: several backwards per step
  GPT model(c, LocalUnits::of_rank(c, part, g.grid.tp_rank), g.tp_or_null());
  std::vector<Parameter*> params = model.parameters();
  QueuedOnStream queued(*g.dp);
  test::CountingCommunicator plain(*g.dp);
  test::CountingCommunicator& counted = on_stream ? queued : plain;
  GradientSync sync(counted, world, g.grid, part, 4096);  // small buckets: several per model
  Run out;
  for (int step = 0; step < 3; ++step) {
    Tensor ids = test::tokens(batch, 7, 1 + step), targets = test::tokens(batch, 7, 11 + step);
    const std::pair<int64_t, int64_t> w = g.grid.windows(batch);
    Batch mine{slice_rows(ids, w.first, w.second), slice_rows(targets, w.first, w.second)};
    if (overlap) sync.begin_backward(params);
    accumulate_gradients(
        mine, micro, batch, [&](const Tensor& i, const Tensor& t, int64_t) { return model.loss(i, t); },
        overlap ? sync.leaf_hook() : LeafGradReady{});
    out.started_in_backward.push_back(counted.count("start_all_reduce"));
    if (overlap) sync.end_backward();
    if (step == 2) params.back()->value.zero_grad();  // absent everywhere: not what the guess assumed
    sync.sum(params, part);
    out.started.push_back(counted.count("start_all_reduce"));
    counted.calls.clear();
    out.stats.push_back(sync.stats());
    std::vector<std::vector<double>> grads;
    for (Parameter* p : params) {
      grads.push_back(p->grad().defined() ? p->grad().to_vector<double>() : std::vector<double>{});
      p->value.zero_grad();
    }
    out.grads.push_back(grads);
  }
  return out;
}

}  // namespace

TEST_CASE("the all-reduces started during the backward give bitwise the sum after it, and some start before it ends") {
  Communicator& world = test::world();
  if (world.size() < 2) return;
  GPTConfig c = test::tiny_config(DType::F64);
  std::vector<int> tps{1};
  if (world.size() % 2 == 0 && world.size() > 2) tps.push_back(2);
  for (int tp : tps)
    for (bool differ : {false, true}) {
      if (differ && tp == 1) continue;  // one rank per replica: one partition
      test::GridComms g = test::grid_of(tp);
      std::vector<std::pair<std::string, Partition>> parts = test::partitions(c, tp);
      // Uneven, and with `differ` each replica its own (some units then go by exchange).
      const Partition& part = parts[differ ? (1 + g.grid.dp_rank) % parts.size() : 2].second;
      std::string what = g.grid.str() + (differ ? ", partitions differ between replicas" : ", one partition");
      INFO(what);
      Run after = run_steps(g, c, part, false), during = run_steps(g, c, part, true);
      for (int step = 0; step < 3; ++step) {
        INFO("step " << step);
        CHECK(after.grads[step] == during.grads[step]);
        CHECK(after.started_in_backward[step] == 0);
        // Each bucket started once, whenever it started (a wrong guess's are dropped, below).
        if (step < 2) CHECK(during.started[step] == during.stats[step].buckets);
        CHECK(after.stats[step].buckets_early == 0);
        CHECK(during.stats[step].buckets == after.stats[step].buckets);
        CHECK(during.stats[step].bytes == after.stats[step].bytes);
      }
      // The first sum has nothing to guess from; the second starts some of its several buckets
      // during the backward; the third's guess was wrong (a gradient went missing): none count.
      CHECK(during.started_in_backward[0] == 0);
      CHECK(during.stats[1].buckets > 2);
      CHECK(during.started_in_backward[1] > 0);
      CHECK(during.stats[1].buckets_early > 0);
      CHECK(during.stats[1].buckets_early <= during.started_in_backward[1]);
      CHECK(during.stats[1].bytes_early > 0);
      CHECK(during.stats[1].bytes_early <= during.stats[1].bytes);
      CHECK(during.stats[2].buckets_early == 0);
      CHECK(during.started[2] > during.stats[2].buckets);  // the guessed ones, dropped, and the sum's own
      // All-reduces that run in the compute's place (NCCL's, on the compute stream) start as
      // early and sum the same bits, but none overlapped the backward's compute: none count.
      Run queued = run_steps(g, c, part, true, true);
      CHECK(queued.grads == during.grads);
      CHECK(queued.started_in_backward[1] == during.started_in_backward[1]);
      for (int step = 0; step < 3; ++step) {
        CHECK(queued.stats[step].buckets_early == 0);
        CHECK(queued.stats[step].bytes_early == 0);
      }
    }
}

// Tensor parallelism equals the single process: losses, every gradient, training curves, after
// repartitions, and across checkpoints written and read at different rank counts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/autograd.h"
#include "core/random.h"
#include "parallel/tp/repartition.h"
#include "parallel/tp/unit_gather.h"
#include "store/checkpoint.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

namespace {

using test::check_same_tensor;
using test::partitions;
using test::relative;
using test::tokens;
GPTConfig config(DType dtype, const std::string& mlp = "gelu") { return test::tiny_config(dtype, mlp); }

// Elementwise |a - b| / (1 + |b|): for f32 weights after many Adam steps, where the K bias (whose
// gradient is zero up to rounding) is moved by Adam's normalised rounding noise, so that a
// relative error per tensor would measure noise.
void check_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  REQUIRE(a.shape() == b.shape());
  std::vector<float> u = a.to_vector<float>(), v = b.to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < u.size(); ++i) worst = std::max(worst, std::abs(double(u[i]) - v[i]) / (1 + std::abs(double(v[i]))));
  INFO(what, ": largest difference ", worst);
  CHECK(worst <= tol);
}

struct Run {
  std::vector<double> losses;
};

// Trains `steps` AdamW steps on fixed batches; repartitions before the steps listed in `moves`.
Run train(GPT& model, Communicator* comm, int steps, Partition* partition = nullptr,
          std::map<int, Partition> moves = {}) {
  AdamW opt({0.9, 0.999, 1e-8, 0.01});
  std::vector<Parameter*> params = model.parameters();
  Run run;
  for (int s = 0; s < steps; ++s) {
    if (moves.count(s)) {
      int64_t sent = repartition(params, *partition, moves.at(s), opt.slot_names(), comm);
      CHECK(sent == test::expected_move(model.config(), *partition, moves.at(s), 2).bytes);
      *partition = moves.at(s);
    }
    Tensor loss = model.loss(tokens(2, 8, s), tokens(2, 8, 1000 + s));
    loss.backward();
    opt.step(params, 3e-3);
    for (Parameter* p : params) p->value.zero_grad();
    run.losses.push_back(loss.item());
  }
  return run;
}

}  // namespace

TEST_CASE("loss and every gradient equal the single process (f64) for every partition and MLP kind") {
  Communicator& comm = test::world();
  for (const std::string& mlp : test::mlp_kinds()) {
    GPTConfig c = config(DType::F64, mlp);
    GPT single(c);
    Tensor ids = tokens(3, 7, 1), targets = tokens(3, 7, 2);
    Tensor ref_loss = single.loss(ids, targets);
    ref_loss.backward();
    std::vector<Parameter*> ref = single.parameters();
    for (const auto& [name, part] : partitions(c, comm.size())) {
      std::string what = mlp + " MLP, partition " + name + ": " + part.str();  // (clang: no structured bindings in INFO's lambda)
      INFO(what);
      GPT tp(c, LocalUnits::of_rank(c, part, comm.rank()), &comm);
      Tensor loss = tp.loss(ids, targets);
      CHECK(relative(loss.item(), ref_loss.item()) < 1e-12);
      loss.backward();
      std::vector<Parameter*> mine = tp.parameters();
      REQUIRE(mine.size() == ref.size());
      for (size_t i = 0; i < mine.size(); ++i) {
        Tensor g = mine[i]->grad().defined() ? mine[i]->grad() : Tensor::zeros(mine[i]->value.shape(), c.dtype);
        check_same_tensor(gather_logical(*mine[i], g, &comm), ref[i]->grad(), 1e-10, mine[i]->name);
      }
    }
  }
}

TEST_CASE("20 training steps follow the single process's loss curve (f32)") {
  Communicator& comm = test::world();
  GPTConfig c = config(DType::F32);
  GPT single(c);
  Run ref = train(single, nullptr, 20);
  for (const auto& [name, part] : partitions(c, comm.size())) {
    std::string what = "partition " + name;  // (clang: no structured bindings in INFO's lambda)
    INFO(what);
    GPT tp(c, LocalUnits::of_rank(c, part, comm.rank()), &comm);
    Run got = train(tp, &comm, 20);
    for (int s = 0; s < 20; ++s) {
      INFO("step ", s, ": ", got.losses[s], " vs ", ref.losses[s]);
      CHECK(std::abs(got.losses[s] - ref.losses[s]) < 1e-4);
    }
  }
}

TEST_CASE("repartitioning mid-run changes nothing: same losses, optimizer state moved with the units") {
  Communicator& comm = test::world();
  int n = comm.size();
  GPTConfig c = config(DType::F32);
  std::vector<UnitGroup> groups = unit_groups(c);
  Partition start = Partition::even(groups, n);
  GPT still(c, LocalUnits::of_rank(c, start, comm.rank()), &comm);
  Run ref = train(still, &comm, 16);

  // Random owners (the same on every rank: seeded), then everything off the last rank, then back.
  auto random_partition = [&](uint64_t seed) { return test::random_partition(c, n, seed); };
  Partition empty_last = start;
  for (const UnitGroup& g : groups) {
    std::vector<int> owners(g.units);
    for (int64_t u = 0; u < g.units; ++u) owners[u] = static_cast<int>(u % std::max(1, n - 1));
    empty_last.set_owners(g.name, owners);
  }
  std::map<int, Partition> moves{{3, random_partition(1)}, {6, empty_last}, {9, start}, {12, random_partition(2)}};
  Partition current = start;
  GPT moving(c, LocalUnits::of_rank(c, start, comm.rank()), &comm);
  Run got = train(moving, &comm, 16, &current, moves);
  for (int s = 0; s < 16; ++s) {
    INFO("step ", s, ": ", got.losses[s], " vs ", ref.losses[s]);
    CHECK(std::abs(got.losses[s] - ref.losses[s]) < 1e-4);
  }
  // The units now sit where the last move put them, with their weights and Adam state.
  std::vector<Parameter*> a = still.parameters(), b = moving.parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!b[i]->replicated()) {  // the same set of units (local order: kept ones first)
      std::vector<int64_t> held = b[i]->units;
      std::sort(held.begin(), held.end());
      CHECK(held == current.units_of(b[i]->group().name, comm.rank()));
    }
    check_close(gather_logical(*b[i], b[i]->value, &comm), gather_logical(*a[i], a[i]->value, &comm), 1e-4,
                b[i]->name + " value");
    // Per tensor, relative: Adam's v is ~1e-6, so an absolute 1e-4 would pass a dropped slot.
    for (const char* slot : {"m", "v"})
      check_same_tensor(gather_logical(*b[i], b[i]->state.at(slot), &comm),
                        gather_logical(*a[i], a[i]->state.at(slot), &comm), 1e-5, b[i]->name + "." + slot);
  }
}

TEST_CASE("one repartition moves exactly the bytes of the units that changed owner") {
  Communicator& comm = test::world();
  int n = comm.size();
  GPTConfig c = config(DType::F32);
  std::vector<UnitGroup> groups = unit_groups(c);
  Partition from = Partition::even(groups, n), heads = from;
  std::vector<int> owners = from.owners("h.1.head");
  std::rotate(owners.begin(), owners.begin() + 1, owners.end());  // shift heads of layer 1
  heads.set_owners("h.1.head", owners);
  {
    GPT model(c, LocalUnits::of_rank(c, from, comm.rank()), &comm);
    int64_t sent = repartition(model.parameters(), from, heads, {"m", "v"}, &comm);
    int64_t moved = 0;
    for (int64_t u = 0; u < c.n_head; ++u) moved += from.owners("h.1.head")[u] != owners[u];
    // Per head: QKV rows 3D x C and bias 3D, out-projection rows D x C; each with m and v.
    int64_t d = c.head_dim(), per_head = (3 * d * c.n_embd + 3 * d + d * c.n_embd) * 3 * 4;
    CHECK(sent == moved * per_head);
  }
  // Every kind at once (heads, MLP blocks, vocabulary blocks with the short last one), with no,
  // one and two optimizer slots, by either transfer.
  Partition to = test::random_partition(c, n, 3);
  for (const std::vector<std::string>& slots :
       {std::vector<std::string>{}, std::vector<std::string>{"momentum"}, std::vector<std::string>{"m", "v"}})
    for (TransferMethod method : {TransferMethod::PointToPoint, TransferMethod::AllToAllV}) {
      INFO(slots.size(), " slots, ", std::string(method_name(method)));
      GPT model(c, LocalUnits::of_rank(c, from, comm.rank()), &comm);
      test::ExpectedMove e = test::expected_move(c, from, to, static_cast<int>(slots.size()));
      REQUIRE(e.units > 0);
      CHECK(repartition(model.parameters(), from, to, slots, &comm, method) == e.bytes);
    }
}

// Ranks [0, m) of the world as an m-rank group; the other ranks sit the group's work out.
struct Group {
  std::unique_ptr<Communicator> comm;
  bool member;
};
Group first_ranks(int m) {
  int r = test::world().rank();
  return {make_mpi_communicator(r < m ? 0 : 1), r < m};
}

TEST_CASE("a checkpoint written on an uneven partition loads at any rank count with the same loss, every MLP kind") {
  Communicator& world = test::world();
  int n = world.size();
  // This run's own directory: a file left by an earlier run can neither pass nor fail it.
  test::SharedTempDir dir("mpi-checkpoints");
  for (const std::string& mlp : test::mlp_kinds()) {
    INFO(mlp, " MLP");
    GPTConfig c = config(DType::F32, mlp);
    std::vector<UnitGroup> groups = unit_groups(c);
    Tensor ids = tokens(4, 8, 7), targets = tokens(4, 8, 8);
    // Written at each of these rank counts and loaded at each: a 4-rank run checks 4 -> 2, 2 -> 4,
    // 1 -> 4 and the rest, its smaller groups made of its first ranks.
    std::vector<int> sizes{n, std::max(1, n / 2), 1};  // 2 -> {2, 1, 1}, 4 -> {4, 2, 1}
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    for (int w : sizes) {
      std::string path = dir.file(mlp + "_tp" + std::to_string(w) + "_uneven.safetensors");
      Tensor loss = Tensor::zeros({1}, DType::F64);
      {
        Group g = first_ranks(w);
        if (g.member) {
          Communicator* gc = w == 1 ? nullptr : g.comm.get();
          Partition uneven = w == 1 ? Partition::even(groups, 1) : partitions(c, w)[1].second;
          GPT tp(c, LocalUnits::of_rank(c, uneven, gc ? gc->rank() : 0), gc);
          AdamW opt({});
          std::vector<Parameter*> params = tp.parameters();
          tp.loss(tokens(2, 8, 5), tokens(2, 8, 6)).backward();
          opt.step(params, 1e-2);
          for (Parameter* p : params) p->value.zero_grad();
          NoGradGuard ng;
          loss = Tensor::from_vector<double>({tp.loss(ids, targets).item()}, {1});
          save_checkpoint(path, tp, &opt, {1, 1, {}}, gc);
        }
      }
      world.broadcast(loss, 0);
      double expected = loss.item();
      for (int r : sizes) {
        std::string what = "written at TP=" + std::to_string(w) + ", loaded at TP=" + std::to_string(r);
        INFO(what);
        Group g = first_ranks(r);
        if (!g.member) continue;
        Communicator* gc = r == 1 ? nullptr : g.comm.get();
        GPT here(c, LocalUnits::of_rank(c, Partition::even(groups, r), gc ? gc->rank() : 0), gc);
        AdamW o2({});
        load_checkpoint(path, here, &o2);
        NoGradGuard ng;
        CHECK(relative(here.loss(ids, targets).item(), expected) < 1e-6);
      }
      world.barrier();
    }
  }
}

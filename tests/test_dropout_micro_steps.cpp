// Dropout with micro-steps: a replica's windows run a few at a time (--micro-batch) and each
// micro-step must drop what the whole batch drops in its windows (train/trainer.cpp passes each
// micro-step's first window in the step's batch to the model). Step by step, the losses of the
// cut runs follow the whole-batch run's, on one process and on a 2 x 2 grid.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;
using test::Run;

TEST_CASE("--dropout with micro-steps: every step's loss is the whole batch's, on 1 process and on a 2 x 2 grid") {
  test::TempDir dir("microdrop");
  // Four heads and MLP units, so that each of a replica's 2 ranks holds some; 8 windows a step.
  const std::string model = "--n-layer 1 --n-head 4 --n-embd 32 --mlp-unit 32 --seq-len 16 --batch 8 --warmup 2 "
                            "--steps 5 --log-every 100 --eval-every 0 --eval-batches 1 --seed 3 --data " +
                            test::corpus(dir);
  auto losses = [&](int ranks, const std::string& name, const std::string& flags) {
    Run r = test::run_train_on(ranks, 2, model + " " + flags + " --metrics " + dir.file(name + ".jsonl"));
    INFO(name, ":\n", r.output);
    REQUIRE(r.status == 0);
    std::vector<double> out;
    for (const nlohmann::json& row : test::read_metrics(dir.file(name + ".jsonl"))) out.push_back(row["loss"].get<double>());
    REQUIRE(out.size() == 5);
    return out;
  };
  const std::vector<double> whole = losses(1, "whole", "--dropout 0.3");
  // Dropout matters at this size: another mask is another loss, far beyond the tolerance below.
  const std::vector<double> without = losses(1, "without", "");
  REQUIRE(std::abs(without[0] - whole[0]) > 1e-3 * whole[0]);
  // One process in micro-steps of 2 windows; a 2 x 2 grid whose replicas take 4 windows each, in
  // micro-steps of 1 (even shares: the windows of each replica do not follow measured speed).
  struct Cut {
    int ranks;
    const char *name, *flags;
  };
  for (const Cut& c : {Cut{1, "micro2", "--micro-batch 2"}, Cut{4, "grid_micro1", "--micro-batch 1 --dp-shares even"}}) {
    const std::vector<double> cut = losses(c.ranks, c.name, std::string("--dropout 0.3 ") + c.flags);
    for (size_t s = 0; s < whole.size(); ++s) {
      INFO(std::string(c.name), ", step ", s + 1);
      CHECK(cut[s] == doctest::Approx(whole[s]).epsilon(1e-5));  // the same sums in other orders
    }
  }
}

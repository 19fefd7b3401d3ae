// End to end: with a slow rank, train moves windows between replicas (--dp-shares speed) and the
// loss curve stays the even split's.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/run_command.h"

using namespace flextp;
using test::Run;

namespace {

struct Curve {
  std::vector<double> loss;
  std::vector<std::vector<int64_t>> windows;  // per step, each replica's
};

}  // namespace

TEST_CASE("under mpirun, uneven window shares across replicas follow the even split's curve") {
  test::TempDir dir("shares");
  std::string data = test::corpus(dir);
  const int steps = 8;
  std::string model = "--n-layer 1 --n-head 2 --n-embd 16 --mlp-unit 16 --seq-len 16 --batch 8 --steps " +
                      std::to_string(steps) + " --warmup 2 --log-every 100 --eval-every 0 --eval-batches 1 --data " + data;
  // Rank 1 (replica 0 with --tp 2, replica 1 with --tp 1) is four times slower.
  auto run = [&](const std::string& args, const std::string& name) {
    std::string metrics = dir.file(name + ".jsonl");
    std::string cmd = "timeout 300 " + test::mpirun() + " -np 4 -x OMP_NUM_THREADS=1 " + test::train_binary() + " " +
                      model + " --straggler 1:4 " + args + " --metrics " + metrics;
    Run r = test::run_command(cmd);
    INFO(cmd, "\n", r.output);
    REQUIRE(r.status == 0);
    std::vector<nlohmann::json> rows = test::read_metrics(metrics);
    REQUIRE(rows.size() == steps);
    Curve c;
    for (const nlohmann::json& row : rows) {
      c.loss.push_back(row["loss"].get<double>());
      std::vector<int64_t> w;
      int64_t sum = 0;
      for (const nlohmann::json& replica : row["replicas"]) {
        w.push_back(replica["windows"].get<int64_t>());
        sum += w.back();
        CHECK(replica["windows_per_s"].get<double>() > 0);
      }
      CHECK(sum == 8);
      c.windows.push_back(w);
    }
    return c;
  };
  Curve even = run("--tp 2 --dp-shares even", "even");
  for (const std::vector<int64_t>& w : even.windows) CHECK(w == std::vector<int64_t>{4, 4});
  for (const std::string& grid : {std::string("--tp 2"), std::string("--tp 1")}) {
    Curve moved = run(grid + " --dp-shares speed", "speed" + grid.substr(5));
    INFO(grid);
    const size_t slow = grid == "--tp 2" ? 0 : 1;
    const std::vector<int64_t> first = moved.windows.front();
    CHECK(first == std::vector<int64_t>(first.size(), static_cast<int64_t>(8 / first.size())));  // starts even
    CHECK(moved.windows.back()[slow] < first[slow]);  // the slow replica computes fewer windows
    for (int s = 0; s < steps; ++s) {
      INFO("step ", s + 1);
      CHECK(moved.loss[s] == doctest::Approx(even.loss[s]).epsilon(1e-5));
    }
  }
}

TEST_CASE("--dp-shares takes speed or even") {
  test::TempDir dir("sharesflag");
  Run r = test::run_train(std::string(test::kTiny) + " --data " + test::corpus(dir) + " --steps 1 --dp-shares fast");
  CHECK(r.status != 0);
  CHECK(r.output.find("--dp-shares") != std::string::npos);
  CHECK(r.output.find("fast") != std::string::npos);
}

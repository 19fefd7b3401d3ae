// Checkpoints and resume across process grids: one replica writes the files a one-process run
// writes, and a run resumes on any data x tensor layout, continuing the same curve.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/safetensors.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;
using test::Run;

namespace {

// Small enough for 4 ranks of one head each; dropout on, so that the random masks must continue
// across the grids too.
const std::string kShape = "--n-layer 1 --n-head 4 --n-embd 32 --mlp-unit 32";
const std::string kModel = kShape +
    " --seq-len 16 --batch 8 --warmup 2 --dropout 0.1 --log-every 100 --eval-every 0 --eval-batches 1 --save-every 2 --seed 3";

// `train` on `ranks` processes in groups of `tp` (one process without mpirun).
Run train(int ranks, int tp, const std::string& args, const std::string& model = kModel) {
  return test::run_train_on(ranks, tp, model + " " + args);
}

// The tensors of `got` equal those of `want` within f32 rounding of reordered sums, relative to
// each tensor's largest value (1e-3: Adam turns the rounding noise of near-zero gradients, such
// as the key biases', into updates of the learning rate's size), with the same names, shapes
// and metadata.
void check_same_checkpoint(const std::string& got, const std::string& want) {
  INFO(got, " against ", want);
  SafetensorsFile a = read_safetensors(got), b = read_safetensors(want);
  for (const char* id : {"run_id", "save_id"}) a.metadata.erase(id), b.metadata.erase(id);  // each run's, each save's own
  CHECK(a.metadata == b.metadata);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto& entry : b.tensors) {  // not a structured binding: INFO captures the name
    const std::string& name = entry.first;
    const Tensor& wt = entry.second;
    INFO(name);
    REQUIRE(a.tensors.count(name) == 1);
    const Tensor& gt = a.tensors.at(name);
    REQUIRE(gt.shape() == wt.shape());
    std::vector<float> x = gt.to_vector<float>(), y = wt.to_vector<float>();
    double largest = 0, diff = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      largest = std::max(largest, std::abs(static_cast<double>(y[i])));
      diff = std::max(diff, std::abs(static_cast<double>(x[i]) - y[i]));
    }
    CHECK(diff <= 1e-3 * largest);
  }
}

// Step by step, the losses of a resumed run (steps from its checkpoint's on) follow those of
// the uninterrupted run, within f32 rounding (the grids sum in other orders).
void check_continues(const std::vector<nlohmann::json>& resumed, const std::vector<nlohmann::json>& whole,
                     size_t from_step) {
  REQUIRE(resumed.size() == whole.size() - from_step);
  for (size_t i = 0; i < resumed.size(); ++i) {
    INFO("step ", resumed[i]["step"]);
    CHECK(resumed[i]["step"] == whole[from_step + i]["step"]);
    CHECK(resumed[i]["loss"].get<double>() == doctest::Approx(whole[from_step + i]["loss"].get<double>()).epsilon(1e-5));
  }
}

}  // namespace

TEST_CASE("a run resumed on grids 1 -> 2 x 2 -> 4 x 1 -> 1 x 4 -> 1 follows the uninterrupted one-process run") {
  test::TempDir dir("resumegrid");
  std::string data = " --data " + test::corpus(dir);
  auto run = [&](int ranks, int tp, const std::string& name, const std::string& load) {
    std::string args = data + " --steps 10 --save " + dir.file(name + ".st") + " --metrics " + dir.file(name + ".jsonl");
    if (!load.empty()) args += " --load " + dir.file(load);
    Run r = train(ranks, tp, args);
    INFO(name, ":\n", r.output);
    REQUIRE(r.status == 0);
    return test::read_metrics(dir.file(name + ".jsonl"));
  };
  std::vector<nlohmann::json> whole = run(1, 1, "one", "");
  REQUIRE(whole.size() == 10);
  // Each run of the chain resumes from the previous one's checkpoint two steps on.
  check_continues(run(4, 2, "grid2x2", "one-step000002.st"), whole, 2);
  check_continues(run(4, 1, "grid4x1", "grid2x2-step000004.st"), whole, 4);
  check_continues(run(4, 4, "grid1x4", "grid4x1-step000006.st"), whole, 6);
  check_continues(run(1, 1, "again", "grid1x4-step000008.st"), whole, 8);
  // Every grid's checkpoints hold what the one-process run's hold: weights, optimizer state,
  // step, seed and optimizer steps.
  for (const char* grid : {"grid2x2", "grid4x1", "grid1x4"})
    for (const char* file : {"-step000008.st", "-step000008.st.state", ".st", ".st.state"})
      check_same_checkpoint(dir.file(grid + std::string(file)), dir.file("one" + std::string(file)));
  check_same_checkpoint(dir.file("again.st"), dir.file("one.st"));
  check_same_checkpoint(dir.file("again.st.state"), dir.file("one.st.state"));
}

TEST_CASE("in a 2 x 2 grid replica 0 alone writes checkpoints, metrics and exports; replica 1 writes, renames and removes nothing") {
  test::TempDir dir("gridfiles");
  std::string data = " --data " + test::corpus(dir);
  // Each replica is told other file names (an MPMD launch: ranks 0-1 are replica 0, ranks 2-3
  // replica 1), so any file of replica 1's would show. Periodic checkpoints of replica 1's name
  // lie there already: pruning them (--keep-last) would be a removal by replica 1.
  for (const char* f : {"r1-step000001.st", "r1-step000001.st.state", "r1-step000003.st", "r1-step000003.st.state"})
    dir.write(f, "not touched");
  auto replica = [&](const std::string& name) {
    return " -np 2 " + test::train_binary() + " " + kModel + " --tp 2 --steps 6 --keep-last 1 --export-hf " +
           dir.file(name + "-hf") + " --save " + dir.file(name + ".st") + " --metrics " + dir.file(name + ".jsonl") + data;
  };
  // An MPMD launch passes -x to the first program only: the environment both inherit carries
  // what the sanitizer build's mpirun passes with -x (no leak checks: OpenMPI's plugins leak on
  // purpose) and one thread per rank.
  Run r = test::run_command("LSAN_OPTIONS=detect_leaks=0 OMP_NUM_THREADS=1 timeout 300 " + test::mpirun() +
                            " -x OMP_NUM_THREADS=1" + replica("r0") + " :" + replica("r1"));
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::set<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path))
    if (e.is_regular_file()) files.insert(std::filesystem::relative(e.path(), dir.path).string());
  std::set<std::string> expected = {"corpus.txt", "r0.st", "r0.st.state", "r0-step000004.st", "r0-step000004.st.state",
                                    "r0.jsonl", "r0-hf/config.json", "r0-hf/model.safetensors",
                                    "r1-step000001.st", "r1-step000001.st.state", "r1-step000003.st", "r1-step000003.st.state"};
  std::string listing;  // for the message should the check fail
  for (const std::string& f : files) listing += f + " ";
  INFO("files: ", listing);
  CHECK(files == expected);
  for (const char* f : {"r1-step000001.st", "r1-step000003.st.state"}) CHECK(test::read_bytes(dir.file(f)) == "not touched");
  CHECK(test::read_metrics(dir.file("r0.jsonl")).size() == 6);
}

TEST_CASE("on a 2 x 2 grid, resuming from a checkpoint of another model or without its optimizer state stops with a clear message") {
  test::TempDir dir("gridbadresume");
  std::string data = " --data " + test::corpus(dir);
  // A model twice as wide, and one of this test's shape.
  std::string wide = kModel;
  wide.replace(wide.find("--n-embd 32"), 11, "--n-embd 64");
  REQUIRE(train(1, 1, data + " --steps 2 --save " + dir.file("wide.st"), wide).status == 0);
  REQUIRE(train(1, 1, data + " --steps 2 --save " + dir.file("m.st")).status == 0);
  auto fails_with = [&](const std::string& args, const std::string& message) {
    Run r = train(4, 2, data + " --steps 4 --save " + dir.file("out.st") + " " + args);
    INFO(args, "\n", r.output);
    CHECK(r.status > 0);
    CHECK(r.status != 124);  // not the timeout
    CHECK(r.output.find(message) != std::string::npos);
  };
  fails_with("--load " + dir.file("wide.st"), "--n-embd 32 differs from the 64 of checkpoint " + dir.file("wide.st"));
  std::filesystem::remove(dir.file("m.st.state"));
  fails_with("--load " + dir.file("m.st"), "cannot resume from " + dir.file("m.st") + ": its optimizer state " +
                                               dir.file("m.st.state") + " is missing");
}

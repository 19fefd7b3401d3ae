// The one rule for resuming (train/option_table.h): a recorded option a resumed run does not give
// takes the checkpoint's value; one it gives replaces it (may change, logged) or must equal it;
// files older than the records (a checkpoint written by cdb7786, kept in tests/data) still load.
#include <doctest/doctest.h>

#include <filesystem>

#include "core/safetensors.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "train/flags.h"

using namespace flextp;
using test::corpus;
using test::kTiny;
using test::Run;
using test::run_train;

namespace {

struct Parsed {
  CLI::App app;
  TrainOptions o;
  OptionTable table{add_train_flags(app, o)};
  explicit Parsed(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  }
  std::string resume(const std::map<std::string, std::string>& records) {
    return resume_options(table, records, "m.st", [&](const std::string& flag) { return app.count(flag) > 0; });
  }
};

const std::string kLegacy = FLEXTP_SOURCE_DIR "/tests/data/checkpoint-cdb7786/model.safetensors";

}  // namespace

TEST_CASE("a resumed run takes what it does not give from the checkpoint, replaces what may change, refuses a mismatch") {
  Parsed plain({});
  CHECK(plain.resume({{"weight-decay", "0.05"}, {"seed", "7"}, {"n_layer", "2"}, {"tokenizer", "gpt2"}}) == "");
  CHECK(plain.o.optimization.weight_decay == 0.05);
  CHECK(plain.o.seed == 7);
  CHECK(plain.o.model.n_layer == 2);
  CHECK(plain.o.data.tokenizer == "gpt2");

  Parsed changed({"--weight-decay", "0.2", "--lr", "1e-3"});
  CHECK(changed.resume({{"weight-decay", "0.05"}, {"lr", "0.001"}}) == "--weight-decay 0.2 replaces the checkpoint's 0.05\n");
  CHECK(changed.o.optimization.weight_decay == 0.2);

  Parsed seed({"--seed", "8"});
  CHECK_THROWS_WITH_AS(seed.resume({{"seed", "7"}}),
                       doctest::Contains("--seed 8 differs from the 7 of checkpoint m.st: a resumed run keeps it; leave --seed out"),
                       Error);
  Parsed same({"--seed", "7", "--n-layer", "2"});
  CHECK(same.resume({{"seed", "7"}, {"n_layer", "2"}}) == "");

  // An older checkpoint records nothing of an option: the command line's value stays.
  Parsed older({"--weight-decay", "0.3"});
  CHECK(older.resume({}) == "");
  CHECK(older.o.optimization.weight_decay == 0.3);
  // A record that is no value of its option is refused, naming both.
  Parsed bad({});
  CHECK_THROWS_WITH_AS(bad.resume({{"grad-clip", "x"}}), doctest::Contains("its record of --grad-clip, 'x'"), Error);
}

TEST_CASE("a checkpoint records its run's optimizer settings, and a resumed run keeps them") {
  test::TempDir dir("keeps");
  const std::string base = std::string(kTiny) + " --data " + corpus(dir) + " --metrics ";
  Run full = run_train(base + dir.file("full.jsonl") + " --steps 6 --weight-decay 0.05 --grad-clip 0.5 --save " +
                       dir.file("full.st") + " --save-every 3");
  REQUIRE_MESSAGE(full.status == 0, full.output);
  const std::string step3 = dir.file("full-step000003.st");
  SafetensorsFile state = read_safetensors(step3 + ".state");
  CHECK(state.metadata.at("extra.weight-decay") == "0.05");
  CHECK(state.metadata.at("extra.grad-clip") == "0.5");
  CHECK(state.metadata.at("extra.seed") == "1337");
  // Resumed without the flags: the same steps as the run that never stopped.
  Run rest = run_train(base + dir.file("rest.jsonl") + " --steps 6 --no-save --load " + step3);
  REQUIRE_MESSAGE(rest.status == 0, rest.output);
  CHECK(rest.output.find("replaces") == std::string::npos);
  std::vector<nlohmann::json> a = test::read_metrics(dir.file("full.jsonl")), b = test::read_metrics(dir.file("rest.jsonl"));
  REQUIRE(a.size() == 6);
  REQUIRE(b.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(b[i]["loss"] == a[3 + i]["loss"]);
  // Given anew: taken, and said.
  Run changed =
      run_train(base + dir.file("changed.jsonl") + " --steps 6 --no-save --weight-decay 0.2 --load " + step3);
  REQUIRE_MESSAGE(changed.status == 0, changed.output);
  CHECK_MESSAGE(changed.output.find("--weight-decay 0.2 replaces the checkpoint's 0.05\n") != std::string::npos,
                changed.output);
}

TEST_CASE("a checkpoint written before options were recorded (cdb7786) still loads and resumes") {
  REQUIRE(std::filesystem::exists(kLegacy));
  test::TempDir dir("legacy");
  const std::string base = std::string(kTiny) + " --data " + corpus(dir) + " --no-save --steps 5 --load " + kLegacy;
  Run resumed = run_train(base);
  REQUIRE_MESSAGE(resumed.status == 0, resumed.output);
  // Its seed from its optimizer state, its tokenizer from its extra entry.
  CHECK_MESSAGE(resumed.output.find("resumed " + kLegacy + " at step 3 with its seed 7\n") != std::string::npos,
                resumed.output);
  Run other = run_train(base + " --seed 8");
  CHECK(other.status == 1);
  CHECK_MESSAGE(other.output.find("--seed 8 differs from the 7 of checkpoint " + kLegacy) != std::string::npos,
                other.output);
  Run gpt2 = run_train(base + " --tokenizer gpt2");
  CHECK(gpt2.status == 1);
  CHECK_MESSAGE(gpt2.output.find("--tokenizer gpt2 differs from the byte of checkpoint") != std::string::npos,
                gpt2.output);
}

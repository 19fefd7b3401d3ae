// What train does when a user leaves things out: a run that trains keeps its checkpoint in a
// directory of its own (runs/NAME/, NAME a name and never a path) and says so, a run that trains
// nothing keeps nothing, and a resume with another --steps keeps the learning-rate schedule it
// was trained with unless --reset-schedule is given, and says which it did.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "optim/schedule.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;
using test::kTiny;
using test::Run;

namespace {

bool has(const Run& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

// train with `args`, started in `dir` (where runs/ goes).
Run train_in(const test::TempDir& dir, const std::string& args) {
  return test::run_command("cd " + dir.path.string() + " && " + test::train_binary() + " " + kTiny + " --data " +
                           dir.file("corpus.txt") + " " + args);
}

// The run directories under dir/runs.
std::vector<std::string> run_dirs(const test::TempDir& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir.path / "runs", ec)) out.push_back(e.path().filename());
  return out;
}

}  // namespace

TEST_CASE("a run without --save keeps its checkpoint in runs/NAME/ and says so; one that trains nothing keeps nothing") {
  test::TempDir dir("defaultsave");
  test::corpus(dir);
  Run r = train_in(dir, "--steps 2");
  REQUIRE_MESSAGE(r.status == 0, r.output);
  std::vector<std::string> runs = run_dirs(dir);
  REQUIRE(runs.size() == 1);
  const std::string saved = "runs/" + runs[0] + "/model.safetensors";
  INFO(r.output);
  CHECK(has(r, "checkpoint: " + saved + " (no --save given; --no-save keeps nothing)"));
  CHECK(runs[0].size() == 15);  // YYYYMMDD-HHMMSS
  CHECK(std::filesystem::exists(dir.path / saved));
  CHECK(std::filesystem::exists(dir.path / (saved + ".state")));
  // It resumes like any checkpoint.
  Run resumed = train_in(dir, "--steps 3 --load " + saved + " --no-save");
  CHECK_MESSAGE(resumed.status == 0, resumed.output);
  // A second run in the same second gets a directory of its own; --name names one.
  CHECK(train_in(dir, "--steps 1").status == 0);
  CHECK(run_dirs(dir).size() == 2);
  Run named = train_in(dir, "--steps 1 --name first-try");
  CHECK(named.status == 0);
  CHECK(std::filesystem::exists(dir.path / "runs/first-try/model.safetensors"));
  // Nothing trained, nothing kept: --steps 0, --eval-only, --no-save.
  std::filesystem::rename(dir.path / saved, dir.file("kept.st"));
  std::filesystem::rename(dir.path / (saved + ".state"), dir.file("kept.st.state"));
  std::filesystem::remove_all(dir.path / "runs");
  for (const std::string& args : {std::string("--steps 0"), "--eval-only --load " + dir.file("kept.st"),
                                   std::string("--steps 1 --no-save")}) {
    Run nothing = train_in(dir, args);
    INFO(args, "\n", nothing.output);
    CHECK(nothing.status == 0);
    CHECK_FALSE(has(nothing, "checkpoint:"));
    CHECK_FALSE(has(nothing, "saved "));
  }
  CHECK(run_dirs(dir).empty());
  Run both = train_in(dir, "--steps 1 --no-save --save " + dir.file("m.st"));
  CHECK(both.status == 1);
  CHECK(has(both, "--no-save and --save"));
}

TEST_CASE("--name is a name, not a path: a run name refused writes nothing, outside runs/ or in it") {
  test::TempDir dir("runname");
  test::corpus(dir);
  for (const std::string& name : {std::string("../outside"), dir.file("abs"), std::string("a/b"), std::string(".."),
                                  std::string(".hidden"), std::string(), std::string("two words"), std::string(256, 'x')}) {
    Run r = train_in(dir, "--steps 1 --name '" + name + "'");
    INFO(name, "\n", r.output);
    CHECK(r.status == 1);
    CHECK(has(r, "train: error: --name: '" + name + "' is not a run name (letters, digits, '.', '-' and '_', not "
                 "starting with '.', at most 255): the run goes into runs/NAME/; --save PATH saves elsewhere\n"));
  }
  CHECK_FALSE(std::filesystem::exists(dir.file("outside")));
  CHECK_FALSE(std::filesystem::exists(dir.file("abs")));
  CHECK(run_dirs(dir).empty());
  Run named = train_in(dir, "--steps 1 --name Run-2.b_c");
  CHECK_MESSAGE(named.status == 0, named.output);
  CHECK(std::filesystem::exists(dir.path / "runs/Run-2.b_c/model.safetensors"));
  // The longest name a file system takes, 255 characters, is a name.
  const std::string longest(255, 'n');
  Run longest_name = train_in(dir, "--steps 1 --name " + longest);
  CHECK_MESSAGE(longest_name.status == 0, longest_name.output);
  CHECK(std::filesystem::exists(dir.path / "runs" / longest / "model.safetensors"));
}

TEST_CASE("the README's quick start needs no directory made first: runs/ is made for --metrics and the checkpoint") {
  test::TempDir dir("quickstart");
  test::corpus(dir);
  REQUIRE_FALSE(std::filesystem::exists(dir.path / "runs"));
  Run r = train_in(dir, "--steps 2 --name quick --metrics runs/quick.jsonl");
  CHECK_MESSAGE(r.status == 0, r.output);
  CHECK(test::read_metrics(dir.file("runs/quick.jsonl")).size() == 2);
  CHECK(std::filesystem::exists(dir.path / "runs/quick/model.safetensors"));
}

TEST_CASE("a resume with more --steps keeps the learning-rate schedule it was trained with, unless --reset-schedule") {
  test::TempDir dir("keepschedule");
  test::corpus(dir);
  const std::string m = dir.file("m.st");
  // 10 steps, a checkpoint after 4: the cosine is in the middle of its decay there.
  Run whole = train_in(dir, "--steps 10 --save " + m + " --save-every 4 --metrics " + dir.file("whole.jsonl"));
  REQUIRE_MESSAGE(whole.status == 0, whole.output);
  const std::string at4 = dir.file("m-step000004.st");
  REQUIRE(std::filesystem::exists(at4));
  std::vector<nlohmann::json> a = test::read_metrics(dir.file("whole.jsonl"));
  Run kept = train_in(dir, "--steps 20 --no-save --load " + at4 + " --metrics " + dir.file("kept.jsonl"));
  REQUIRE_MESSAGE(kept.status == 0, kept.output);
  CHECK(has(kept, "learning-rate schedule kept as trained: its cosine ends at step 10 (not --steps 20"));
  std::vector<nlohmann::json> b = test::read_metrics(dir.file("kept.jsonl"));
  REQUIRE(b.size() == 16);
  const CosineSchedule original{1e-3, 1e-4, 2, 10}, stretched{1e-3, 1e-4, 2, 20};
  CHECK(b[0]["step"] == 5);
  CHECK(b[0]["lr"].get<double>() == original.at(4));
  CHECK(b[0]["lr"] == a[4]["lr"]);  // the step the first run took there, bitwise
  CHECK(b[5]["lr"].get<double>() == original.at(9));
  CHECK(b[15]["lr"].get<double>() == original.min_lr);  // past the cosine's end
  CHECK(original.at(4) != stretched.at(4));
  Run reset = train_in(dir, "--steps 20 --no-save --reset-schedule --load " + at4 + " --metrics " +
                                dir.file("reset.jsonl"));
  REQUIRE_MESSAGE(reset.status == 0, reset.output);
  CHECK(has(reset, "learning-rate schedule stretched from the checkpoint's 10 steps to --steps 20 (--reset-schedule)"));
  std::vector<nlohmann::json> c = test::read_metrics(dir.file("reset.jsonl"));
  REQUIRE(c.size() == 16);
  CHECK(c[0]["lr"].get<double>() == stretched.at(4));
  // The same --steps: nothing to say, the same schedule.
  Run same = train_in(dir, "--steps 10 --no-save --load " + at4);
  REQUIRE_MESSAGE(same.status == 0, same.output);
  CHECK_FALSE(has(same, "learning-rate schedule"));
  CHECK(train_in(dir, "--steps 3 --reset-schedule --no-save").status == 1);  // nothing to reset
}

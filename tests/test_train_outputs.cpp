// What train writes, checked before it is needed and never lost: flags that could not take effect
// are refused, outputs make their missing directories (never under a regular file), the save and
// export paths are checked before step 1, a metrics file that cannot be
// written stops the run, --keep-last removes only its own run's checkpoints, and a resume refuses
// weights, optimizer state and ranks' checkpoints that do not belong together.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <unistd.h>

#include "core/safetensors.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;
using test::kTiny;
using test::Run;
using test::run_train;

namespace {
bool has(const Run& r, const std::string& text) { return r.output.find(text) != std::string::npos; }
bool exists(const std::string& path) { return std::filesystem::exists(path); }

// Refused with status 1 and `message`, before the first step.
void refused(const std::string& args, const std::string& message) {
  Run r = run_train(args);
  INFO(args, "\n", r.output);
  CHECK(r.status == 1);
  CHECK(has(r, "train: error: " + message));
  CHECK_FALSE(has(r, "step     1"));
}
}  // namespace

TEST_CASE("flags that could not take effect are refused before training") {
  test::TempDir dir("flagsidle");
  const std::string base = std::string(kTiny) + " --data " + test::corpus(dir);
  const std::string m = dir.file("m.st");
  refused(base + " --steps 4 --save-every 2", "--save-every 2 needs --save PATH");
  refused(base + " --steps 4 --save-every 2 --keep-last 1", "--save-every 2 needs --save PATH");
  refused(base + " --steps 4 --save " + m + " --keep-last 1", "--keep-last 1 needs --save-every N");
  REQUIRE(run_train(base + " --steps 4 --save " + m).status == 0);
  refused(base + " --eval-only --load " + m + " --save " + dir.file("x.st"), "--eval-only trains nothing: --save");
  refused(base + " --eval-only --load " + m + " --export-hf " + dir.file("hf"), "--eval-only exports nothing");
  CHECK_FALSE(exists(dir.file("x.st")));
  // --steps counts the checkpoint's steps: behind them there is nothing to train.
  refused(base + " --steps 3 --load " + m + " --save " + dir.file("y.st"), "--steps 3 is behind step 4 of " + m);
  CHECK_FALSE(exists(dir.file("y.st")));
  Run same = run_train(base + " --steps 4 --load " + m);
  CHECK_MESSAGE(same.status == 0, same.output);
  CHECK(has(same, "resumed " + m + " at step 4 with its seed 1337: nothing to train (--steps is its step)"));
  // --steps 0 with --load trains nothing from the checkpoint: its export (docs/files.md).
  Run exported = run_train(base + " --steps 0 --load " + m + " --export-hf " + dir.file("hf0"));
  CHECK_MESSAGE(exported.status == 0, exported.output);
  CHECK(exists(dir.file("hf0") + "/model.safetensors"));
}

TEST_CASE("outputs make their missing directories; the save and export paths are checked before the first step") {
  test::TempDir dir("outpaths");
  const std::string base = std::string(kTiny) + " --data " + test::corpus(dir) + " --steps 2";
  // Directories that do not exist are made, as deep as the path goes (was: "create it first").
  Run made = run_train(base + " --save " + dir.file("new/deep/m.st") + " --metrics " + dir.file("logs/a/m.jsonl") +
                       " --export-hf " + dir.file("new/hf/x"));
  CHECK_MESSAGE(made.status == 0, made.output);
  CHECK(exists(dir.file("new/deep/m.st.state")));
  CHECK(test::read_metrics(dir.file("logs/a/m.jsonl")).size() == 2);
  CHECK(exists(dir.file("new/hf/x/config.json")));
  std::filesystem::create_directory(dir.file("d"));
  refused(base + " --save " + dir.file("d"), "--save " + dir.file("d") + " is a directory");
  // Never under a regular file.
  dir.write("file", "x");
  refused(base + " --save " + dir.file("file/m.st"), "--save " + dir.file("file/m.st") + ": " + dir.file("file") +
                                                         " is not a directory");
  refused(base + " --save " + dir.file("file/a/m.st"), "--save " + dir.file("file/a/m.st") + ": " + dir.file("file") +
                                                           " is not a directory");
  refused(base + " --metrics " + dir.file("file/a/m.jsonl"), "--metrics " + dir.file("file/a/m.jsonl") +
                                                                 ": cannot create directory " + dir.file("file/a") +
                                                                 ": " + dir.file("file") + " is not a directory");
  refused(base + " --export-hf " + dir.file("file"), "--export-hf " + dir.file("file") + " is a file, not a directory");
  refused(base + " --export-hf " + dir.file("file/hf"), "--export-hf " + dir.file("file/hf") + ": " + dir.file("file") +
                                                              " is not a directory");
  if (::geteuid() != 0) {  // root writes into a read-only directory anyway
    std::filesystem::create_directory(dir.file("ro"));
    std::filesystem::permissions(dir.file("ro"), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    refused(base + " --save " + dir.file("ro/m.st"), "--save " + dir.file("ro/m.st") + ": cannot write there");
    refused(base + " --save " + dir.file("ro/new/m.st"), "--save " + dir.file("ro/new/m.st") +
                                                             " (its directory to be created in " + dir.file("ro") +
                                                             "): cannot write there");
    refused(base + " --export-hf " + dir.file("ro/hf"), "--export-hf " + dir.file("ro/hf") + " (to be created in " +
                                                          dir.file("ro") + "): cannot write there");
    std::filesystem::permissions(dir.file("ro"), std::filesystem::perms::owner_all);
  }
  // An export directory that does not exist yet is created at the end; the checks leave nothing behind.
  Run ok = run_train(base + " --save " + dir.file("m.st") + " --export-hf " + dir.file("new/hf"));
  CHECK_MESSAGE(ok.status == 0, ok.output);
  CHECK(exists(dir.file("new/hf/config.json")));
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path))
    CHECK_MESSAGE(e.path().string().find(".tmp.") == std::string::npos, e.path().string());
}

TEST_CASE("a metrics file that cannot be written stops the run with a clear error") {
  test::TempDir dir("metricsfull");
  const std::string base = std::string(kTiny) + " --data " + test::corpus(dir) + " --steps 50";
  Run full = run_train(base + " --metrics /dev/full");
  INFO(full.output);
  CHECK(full.status == 1);
  CHECK(has(full, "train: error: cannot write --metrics file /dev/full at step 1: No space left on device"));
  // A disk that fills up after some lines (a file size limit; SIGXFSZ left at its default, which
  // train ignores so that the write fails instead of killing it): the run stops there.
  Run limited = test::run_with_file_limit(std::string(FLEXTP_TRAIN_BINARY) + " " + base + " --metrics " +
                                              dir.file("m.jsonl"),
                                          2000, dir.file("log.txt"), false);
  INFO(limited.output);
  CHECK(limited.status == 1);
  CHECK(has(limited, "train: error: cannot write --metrics file " + dir.file("m.jsonl") + " at step "));
  CHECK(has(limited, "File too large (disk full?); its last line may be cut"));
}

TEST_CASE("a file size limit (SIGXFSZ) during a save gives a clear error, not a silent kill") {
  test::TempDir dir("sigxfsz");
  const std::string base = std::string(kTiny) + " --data " + test::corpus(dir) + " --steps 2";
  Run r = test::run_with_file_limit(std::string(FLEXTP_TRAIN_BINARY) + " " + base + " --save " + dir.file("m.st"), 4096,
                                    dir.file("log.txt"), false);
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(has(r, "train: error: cannot save checkpoint " + dir.file("m.st") + " (step 2): cannot write "));
  CHECK(has(r, "File too large (disk full?)"));
}

TEST_CASE("--keep-last keeps the run's own new checkpoints beside an older run's") {
  test::TempDir dir("keepown");
  const std::string base = std::string(kTiny) + " --data " + test::corpus(dir);
  const std::string m = dir.file("m.st");
  // An older run's checkpoint named as of step 1000.
  REQUIRE(run_train(base + " --steps 2 --save-every 1 --save " + m).status == 0);
  std::filesystem::rename(dir.file("m-step000001.st"), dir.file("m-step001000.st"));
  std::filesystem::rename(dir.file("m-step000001.st.state"), dir.file("m-step001000.st.state"));
  const std::string stale = test::read_bytes(dir.file("m-step001000.st"));
  Run r = run_train(base + " --steps 25 --save-every 5 --keep-last 1 --save " + m);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir.path))
    if (e.path().filename().string().find("-step") != std::string::npos) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  // Step 25 is the final save (m.st); the newest periodic one is step 20's.
  CHECK(left == std::vector<std::string>{"m-step000020.st", "m-step000020.st.state", "m-step001000.st",
                                         "m-step001000.st.state"});
  CHECK(test::read_bytes(dir.file("m-step001000.st")) == stale);
  // A resumed run is the same run: it prunes the checkpoints its first part wrote.
  Run resumed = run_train(base + " --steps 35 --save-every 5 --keep-last 1 --load " + m + " --save " + m);
  REQUIRE_MESSAGE(resumed.status == 0, resumed.output);
  CHECK(exists(dir.file("m-step000030.st")));
  CHECK_FALSE(exists(dir.file("m-step000020.st")));
  CHECK(exists(dir.file("m-step001000.st")));
}

TEST_CASE("a resume refuses an optimizer state of another run, and ranks given different checkpoints of one step") {
  test::TempDir dir("runid");
  const std::string base = std::string(kTiny) + " --data " + test::corpus(dir);
  const std::string a = dir.file("a.st"), b = dir.file("b.st");
  REQUIRE(run_train(base + " --steps 4 --save " + a).status == 0);
  REQUIRE(run_train(base + " --steps 4 --save " + b + " --lr 1e-3").status == 0);
  const auto meta_a = read_safetensors_metadata(a), meta_b = read_safetensors_metadata(b);
  REQUIRE(meta_a.at("run_id") != meta_b.at("run_id"));
  // A resumed run keeps its run's identity; each save has its own.
  REQUIRE(run_train(base + " --steps 5 --load " + a + " --save " + dir.file("a5.st")).status == 0);
  CHECK(read_safetensors_metadata(dir.file("a5.st")).at("run_id") == meta_a.at("run_id"));
  CHECK(read_safetensors_metadata(dir.file("a5.st")).at("save_id") != meta_a.at("save_id"));

  std::filesystem::copy_file(b + ".state", a + ".state", std::filesystem::copy_options::overwrite_existing);
  refused(base + " --steps 6 --load " + a,
          a + ".state (step 4, run " + meta_b.at("run_id") + ", save " + meta_b.at("save_id") + ") does not belong to " +
              a + " (step 4, run " + meta_a.at("run_id") + ", save " + meta_a.at("save_id") + "): the pair is inconsistent");

  // Two ranks, each given its own checkpoint of step 4 (another run's on rank 1): refused before
  // step 1, where the step alone would have let them train a model of mixed weights.
  const std::string c = dir.file("c.st");
  REQUIRE(run_train(base + " --steps 4 --save " + c).status == 0);
  const std::string train = std::string("env LSAN_OPTIONS=detect_leaks=0 ") + FLEXTP_TRAIN_BINARY + " " + base +
                            " --steps 6 --load ";
  Run mixed = test::run_command("timeout 120 " + test::mpirun() + " -x OMP_NUM_THREADS=1 -np 1 " + train + b +
                                " : -np 1 " + train + c);
  INFO(mixed.output);
  CHECK(mixed.status != 0);
  CHECK(mixed.status != 124);
  CHECK(has(mixed, "the ranks did not read the same inputs: the loaded checkpoint (its run and save ids) differs "
                   "between rank 0 and rank 1"));
  CHECK_FALSE(has(mixed, "step     1"));
}

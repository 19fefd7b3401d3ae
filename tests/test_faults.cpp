// Leaving a run alone for a day: non-finite steps are skipped and bounded, checkpoints survive a
// kill at any point of a save, --keep-last prunes, a dead or silent rank ends the job instead of
// hanging it, and a resumed run continues the same loss curve on another tensor-parallel layout.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <csignal>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;
using test::kTiny;
using test::Run;
using test::run_command;
using test::run_train;

namespace {
bool exists(const std::string& path) { return std::filesystem::exists(path); }
// Environment variables set before the command reach every rank.
std::string mpirun(int ranks) {
  return "timeout 120 " + std::string(FLEXTP_MPIRUN) + " -np " + std::to_string(ranks) + " -x OMP_NUM_THREADS=1 " +
         FLEXTP_TRAIN_BINARY + " ";
}
}  // namespace

TEST_CASE("a non-finite loss skips the step with a warning; too many in a row stop the run") {
  test::TempDir dir("badsteps");
  std::string tiny = kTiny;
  tiny.replace(tiny.find("--eval-every 0"), 14, "--eval-every 1");  // the validation loss after every step
  std::string base = tiny + " --data " + test::corpus(dir);
  Run r = run_train(base + " --steps 8 --fault-nan-steps 3,4 --metrics " + dir.file("m.jsonl"));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  CHECK(r.output.find("step     4 | warning: non-finite loss: step skipped (2 in a row, 2 in all)") != std::string::npos);
  std::vector<nlohmann::json> rows = test::read_metrics(dir.file("m.jsonl"));
  REQUIRE(rows.size() == 8);
  CHECK(rows[2]["skipped"] == true);
  CHECK(rows[2]["loss"].is_null());
  CHECK(!rows[4].contains("skipped"));
  CHECK(std::isfinite(rows[7]["loss"].get<double>()));
  // A skipped step changes nothing: after the skipped steps 3 and 4 the weights are those of a
  // clean run after step 2, as the validation loss (of the weights alone) after each step shows.
  Run clean = run_train(base + " --steps 8 --metrics " + dir.file("clean.jsonl"));
  REQUIRE(clean.status == 0);
  std::vector<nlohmann::json> ref = test::read_metrics(dir.file("clean.jsonl"));
  CHECK(rows[1]["loss"] == ref[1]["loss"]);
  REQUIRE(ref[1].contains("val_loss"));
  CHECK(rows[1]["val_loss"] == ref[1]["val_loss"]);
  CHECK(rows[2]["val_loss"] == ref[1]["val_loss"]);
  CHECK(rows[3]["val_loss"] == ref[1]["val_loss"]);
  CHECK(ref[2]["val_loss"] != ref[1]["val_loss"]);  // where a step is taken, the weights do change

  // Divergence: a learning rate of 1e38 overflows the weights after one step. Every later step is
  // bad; the third in a row stops the run, and the last good checkpoint is left as it was.
  std::string ckpt = dir.file("m.st");
  Run d = run_train(base + " --steps 20 --lr 1e38 --grad-clip 0 --max-bad-steps 3 --save-every 1 --save " + ckpt);
  CHECK(d.status == 1);
  CHECK(d.output.find("steps in a row had a non-finite loss or gradient (--max-bad-steps 3)") != std::string::npos);
  CHECK(d.output.find("The last good checkpoint is untouched") != std::string::npos);
  CHECK(!exists(ckpt));  // no final save of a broken model
  CHECK(exists(dir.file("m-step000001.st")));
  CHECK(run_train("--eval-only --load " + dir.file("m-step000001.st") + " " + kTiny + " --data " + test::corpus(dir)).status == 0);
}

TEST_CASE("a save killed at any point leaves a loadable checkpoint") {
  test::TempDir dir("killsave");
  std::string base = std::string(kTiny) + " --data " + test::corpus(dir);
  std::string m = dir.file("m.st");
  // Writes of a save: 1 the optimizer state (as m.st.state.next), 2 the weights, then a rename.
  REQUIRE(run_train(base + " --steps 4 --save " + m).status == 0);
  std::string before = test::read_bytes(m);
  for (const char* fault : {"FLEXTP_FAULT_KILL_IN_WRITE=1", "FLEXTP_FAULT_KILL_IN_WRITE=2", "FLEXTP_FAULT_KILL_AFTER_WRITE=1",
                            "FLEXTP_FAULT_KILL_AFTER_WRITE=2"}) {
    INFO(std::string(fault));
    // Resume to step 8, saving over m.st, killed inside that save.
    Run killed = run_command(std::string("env ") + fault + " " + FLEXTP_TRAIN_BINARY + " " + base +
                             " --steps 8 --load " + m + " --save " + m);
    CHECK(killed.status == 137);  // 128 + SIGKILL, as the shell reports it
    // Whatever was interrupted, m.st loads with its optimizer state and training goes on.
    Run resumed = run_train(base + " --steps 10 --load " + m + " --save " + dir.file("after.st"));
    CHECK_MESSAGE(resumed.status == 0, resumed.output);
    bool weights_replaced = std::string(fault) == "FLEXTP_FAULT_KILL_AFTER_WRITE=2";
    // From the step of the weights on disk: the old ones (4), or the new ones (8) once in place.
    CHECK_MESSAGE(resumed.output.find("resumed " + m + " at step " + (weights_replaced ? "8" : "4")) != std::string::npos,
                  resumed.output);
    CHECK(resumed.output.find("saved " + dir.file("after.st") + " (step 10)") != std::string::npos);
    CHECK((test::read_bytes(m) == before) == !weights_replaced);
    if (weights_replaced) {  // the new weights are in place: their state came from m.st.state.next
      std::filesystem::rename(m + ".state.next", m + ".state");
      REQUIRE(run_train(base + " --steps 4 --save " + m).status == 0);  // back to step 4 for the next case
      before = test::read_bytes(m);
    }
    for (const auto& e : std::filesystem::directory_iterator(dir.path))
      if (e.path().string().find(".tmp.") != std::string::npos) std::filesystem::remove(e.path());
  }
  // Periodic checkpoints: killed while writing step 4's, the step-2 one is whole.
  Run killed = run_command(std::string("env FLEXTP_FAULT_KILL_IN_WRITE=3 ") + FLEXTP_TRAIN_BINARY + " " + base +
                           " --steps 6 --save-every 2 --save " + dir.file("p.st"));
  CHECK(killed.status == 137);
  CHECK(!exists(dir.file("p-step000004.st")));
  CHECK(run_train(base + " --steps 6 --load " + dir.file("p-step000002.st")).status == 0);
}

TEST_CASE("a disk that fills up in the middle of a save: a clear error, the previous checkpoint intact") {
  test::TempDir dir("diskfull");
  std::string base = std::string(kTiny) + " --data " + test::corpus(dir);
  std::string m = dir.file("m.st");
  REQUIRE(run_train(base + " --steps 2 --save " + m).status == 0);
  const std::string weights = test::read_bytes(m), state = test::read_bytes(m + ".state");
  // Resumed to step 4 and saved over m.st on a disk with room for half the optimizer state.
  Run full = test::run_with_file_limit(std::string(FLEXTP_TRAIN_BINARY) + " " + base + " --steps 4 --load " + m +
                                           " --save " + m,
                                       state.size() / 2, dir.file("log.txt"), true);
  INFO(full.output);
  CHECK(full.status == 1);
  CHECK(full.output.find("train: error: cannot save checkpoint " + m + " (step 4): cannot write ") != std::string::npos);
  CHECK(full.output.find("File too large (disk full?)") != std::string::npos);
  CHECK(test::read_bytes(m) == weights);
  CHECK(test::read_bytes(m + ".state") == state);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"corpus.txt", "log.txt", "m.st", "m.st.state"});  // no partial files
  Run resumed = run_train(base + " --steps 3 --load " + m);
  CHECK_MESSAGE(resumed.status == 0, resumed.output);
  CHECK(resumed.output.find("at step 2") != std::string::npos);
}

TEST_CASE("--keep-last keeps the newest periodic checkpoints") {
  test::TempDir dir("keeplast");
  Run r = run_train(std::string(kTiny) + " --data " + test::corpus(dir) +
                    " --steps 7 --save-every 1 --keep-last 2 --save " + dir.file("k.st"));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"corpus.txt", "k-step000005.st", "k-step000005.st.state", "k-step000006.st",
                                          "k-step000006.st.state", "k.st", "k.st.state"});
}

TEST_CASE("a rank killed or silenced mid-step ends the job with a clear message, not a hang" * doctest::test_suite("timing")) {
  test::TempDir dir("rankdeath");
  std::string args = std::string(kTiny) + " --data " + test::corpus(dir) + " --steps 200";
  Run killed = run_command(mpirun(2) + args + " --fault-kill 1:3");
  INFO(killed.output);
  CHECK(killed.status != 0);
  CHECK(killed.status != 124);  // ended by itself, not by the test's timeout
  CHECK(killed.output.find("rank 1") != std::string::npos);
  CHECK(killed.output.find("step     1 |") != std::string::npos);  // it had started
  CHECK(killed.output.find("step   101 |") == std::string::npos);  // and ended at step 3
  // A rank that stops answering but stays alive: the others give up after --rank-timeout.
  Run silent = run_command(mpirun(2) + args + " --fault-hang 1:3 --rank-timeout 2");
  INFO(silent.output);
  CHECK(silent.status != 0);
  CHECK(silent.status != 124);
  CHECK(silent.output.find("train: error (rank 0): no progress for 2 s in step 3: another rank has died or hangs") !=
        std::string::npos);
  CHECK(silent.output.find("step   101 |") == std::string::npos);
}

TEST_CASE("saves, exports and samples slower than --rank-timeout do not end a 2-rank run" * doctest::test_suite("timing")) {
  test::TempDir dir("slowsave");
  std::string m = dir.file("m.st");
  // Every save (the periodic one at step 2, the final one, the export) waits 3 s before writing
  // its weights: longer than --rank-timeout 2 on rank 0, which writes, and on rank 1, which waits.
  Run r = run_command("FLEXTP_FAULT_SLOW_SAVE_MS=3000 " + mpirun(2) + kTiny + " --data " + test::corpus(dir) +
                      " --steps 4 --save-every 2 --save " + m + " --export-hf " + dir.file("hf") +
                      " --sample 4 --rank-timeout 2");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("no progress") == std::string::npos);
  CHECK(r.output.find("saved " + dir.file("m-step000002.st") + " (step 2)") != std::string::npos);
  CHECK(r.output.find("saved " + m + " (step 4)") != std::string::npos);
  CHECK(r.output.find("---- sample ----") != std::string::npos);
  // The final checkpoint is whole: its weights and state are of step 4, and training resumes from it.
  CHECK(!exists(m + ".state.next"));
  Run resumed = run_train(std::string(kTiny) + " --data " + test::corpus(dir) + " --steps 5 --load " + m);
  CHECK_MESSAGE(resumed.status == 0, resumed.output);
  CHECK(resumed.output.find("at step 4") != std::string::npos);
  CHECK(exists(dir.file("hf/model.safetensors")));
  CHECK(exists(dir.file("hf/config.json")));
}

TEST_CASE("ranks that read different data, settings or checkpoints stop before step 1, naming the difference") {
  test::TempDir dir("ranksdiffer");
  std::string base = std::string(kTiny) + " --steps 3 --data ";
  std::string data = test::corpus(dir);
  // Rank 0 and rank 1 started with their own arguments (as node-local paths would give them).
  // Each app context of mpirun's ':' syntax gets its own environment: the leak check that the
  // sanitizer build turns off under mpirun (OpenMPI's own allocations) is turned off in both.
  auto two_ranks = [&](const std::string& rank0, const std::string& rank1) {
    const std::string train = std::string("env LSAN_OPTIONS=detect_leaks=0 ") + FLEXTP_TRAIN_BINARY;
    return run_command("timeout 120 " + std::string(FLEXTP_MPIRUN) + " -x OMP_NUM_THREADS=1 -np 1 " + train + " " +
                       rank0 + " : -np 1 " + train + " " + rank1);
  };
  auto stops_with = [&](const Run& r, const std::string& message) {
    INFO(r.output);
    CHECK(r.status != 0);
    CHECK(r.status != 124);  // not the timeout: no hang
    CHECK(r.output.find("the ranks did not read the same inputs: " + message +
                        ". Every rank must see the same files") != std::string::npos);
    CHECK(r.output.find("step     1") == std::string::npos);
  };
  // The same files under two names agree.
  std::filesystem::copy_file(data, dir.file("copy.txt"));
  Run same = two_ranks(base + data, base + dir.file("copy.txt"));
  CHECK_MESSAGE(same.status == 0, same.output);
  std::string other = dir.write("other.txt", test::read_bytes(data).substr(0, 4000) + "a different ending");
  stops_with(two_ranks(base + data, base + other),
             "the training data differs between rank 0 and rank 1; the validation data differs between rank 0 and rank 1");
  stops_with(two_ranks(base + data, base + data + " --dropout 0.1"),
             "the configuration (model and flags) differs between rank 0 and rank 1");
  REQUIRE(run_train(base + data + " --save-every 1 --save " + dir.file("m.st")).status == 0);
  // GPT-2's vocabulary, its last two merges swapped in rank 1's copy (a valid vocabulary whose
  // ids 50254 and 50255 trade places; the corpus uses neither).
  const std::string gpt2 = FLEXTP_SOURCE_DIR "/../shared/gpt2";
  if (exists(gpt2 + "/encoder.json")) {
    std::filesystem::create_directory(dir.file("gpt2"));
    std::string merges = test::read_bytes(gpt2 + "/vocab.bpe");
    const std::string last_two = "\u0120inform ants\n\u0120g azed";
    REQUIRE(merges.rfind(last_two) != std::string::npos);
    merges.replace(merges.rfind(last_two), last_two.size(), "\u0120g azed\n\u0120inform ants");
    dir.write("gpt2/vocab.bpe", merges);
    nlohmann::json encoder = nlohmann::json::parse(test::read_bytes(gpt2 + "/encoder.json"));
    REQUIRE(encoder.at("\u0120informants") == 50254);
    encoder["\u0120informants"] = 50255, encoder["\u0120gazed"] = 50254;
    dir.write("gpt2/encoder.json", encoder.dump());
    std::string tokens = " --tokenizer gpt2 --tokenizer-dir ";
    stops_with(two_ranks(base + data + tokens + gpt2, base + data + tokens + dir.file("gpt2")),
               "the vocabulary differs between rank 0 and rank 1");
  } else {
    MESSAGE("no GPT-2 files in ", gpt2, ": the case of a differing vocabulary is skipped");
  }
  stops_with(two_ranks(base + data + " --load " + dir.file("m-step000001.st"), base + data + " --load " + dir.file("m-step000002.st")),
             "the step of the loaded checkpoint differs between rank 0 and rank 1; the loaded checkpoint (its run and "
             "save ids) differs between rank 0 and rank 1");
}

TEST_CASE("a run resumed on another tensor-parallel size and partition continues the same loss curve") {
  test::TempDir dir("tpresume");
  std::string base = "--n-layer 1 --n-head 4 --n-embd 32 --mlp-unit 16 --seq-len 16 --batch 2 --log-every 100 --eval-every 0 "
                     "--eval-batches 2 --warmup 2 --data " + test::corpus(dir) + " --steps 10";
  REQUIRE(run_train(base + " --save-every 5 --save " + dir.file("one.st") + " --metrics " + dir.file("one.jsonl")).status == 0);
  std::vector<nlohmann::json> one = test::read_metrics(dir.file("one.jsonl"));
  for (const std::string& layout : {std::string("2 --tp-weights 3,1"), std::string("4")}) {
    INFO(layout);
    std::string out = dir.file("tp.jsonl");
    std::filesystem::remove(out);
    Run r = run_command(mpirun(std::stoi(layout)) + base + " --load " + dir.file("one-step000005.st") + " --metrics " + out +
                        (layout.size() > 1 ? layout.substr(1) : ""));
    REQUIRE_MESSAGE(r.status == 0, r.output);
    std::vector<nlohmann::json> tp = test::read_metrics(out);
    REQUIRE(tp.size() == 5);
    for (size_t i = 0; i < 5; ++i) {
      CHECK(tp[i]["step"] == one[5 + i]["step"]);
      CHECK(std::abs(tp[i]["loss"].get<double>() - one[5 + i]["loss"].get<double>()) < 1e-4);
    }
  }
}

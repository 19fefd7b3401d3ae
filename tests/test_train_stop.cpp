// SIGINT and SIGTERM stop a run after its current step, every rank at the same step, with the
// checkpoint saved and status 128 + the signal; a second signal ends it at once.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>

#include "core/safetensors.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;
using test::kTiny;
using test::Run;
using test::run_train;

namespace {
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// train started in the background (`env`: VARIABLE=value ... or empty), its output in `log`.
pid_t start_train(const std::string& env, const std::string& args, const std::string& log) {
  std::string shell = "exec env " + env + " " + test::train_binary() + " " + args + " > " + log + " 2>&1";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", shell.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Waits until `ready` holds (or two minutes have passed: a bound against a hang, not a measure).
template <typename F>
bool wait_for(F&& ready) {
  for (int i = 0; i < 1200; ++i) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

int64_t saved_step(const std::string& path) { return std::stoll(read_safetensors_metadata(path).at("step")); }
}  // namespace

TEST_CASE("SIGINT stops a run after its current step, saves it and exits with 130; it resumes from there") {
  test::TempDir dir("sigint");
  const std::string base = std::string(kTiny) + " --data " + test::corpus(dir);
  const std::string m = dir.file("m.st"), metrics = dir.file("m.jsonl");
  pid_t pid = start_train("", base + " --steps 1000000 --save " + m + " --metrics " + metrics, dir.file("log.txt"));
  REQUIRE(wait_for([&] { return test::read_metrics(metrics).size() >= 3; }));
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::string log = test::read_bytes(dir.file("log.txt"));
  INFO(log);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(has(log, "train: SIGINT: stopping after this step (and saving, with --save); send it again to stop at once"));
  const int64_t steps = static_cast<int64_t>(test::read_metrics(metrics).size());  // the stopping step's line included
  CHECK(has(log, "stopped by SIGINT after step " + std::to_string(steps) + "; resume with --load " + m));
  CHECK(saved_step(m) == steps);
  Run resumed = run_train(base + " --steps " + std::to_string(steps + 1) + " --load " + m);
  CHECK_MESSAGE(resumed.status == 0, resumed.output);
  CHECK(has(resumed.output, "resumed " + m + " at step " + std::to_string(steps)));
}

TEST_CASE("SIGTERM after step 3 saves step 3: the resumed run continues the uninterrupted one bitwise") {
  test::TempDir dir("sigterm");
  const std::string base = std::string(kTiny) + " --data " + test::corpus(dir) + " --steps 6";
  const std::string m = dir.file("m.st");
  Run whole = run_train(base + " --metrics " + dir.file("whole.jsonl"));
  REQUIRE(whole.status == 0);
  // The signal raised in the process as step 3 begins, as if it came from outside then.
  Run stopped = test::run_command("env FLEXTP_FAULT_SIGNAL=0:3:15 " + test::train_binary() + " " + base + " --save " + m);
  INFO(stopped.output);
  CHECK(stopped.status == 143);
  CHECK(has(stopped.output, "saved " + m + " (step 3)"));
  CHECK(has(stopped.output, "stopped by SIGTERM after step 3"));
  CHECK(saved_step(m) == 3);
  Run resumed = run_train(base + " --load " + m + " --metrics " + dir.file("resumed.jsonl"));
  REQUIRE_MESSAGE(resumed.status == 0, resumed.output);
  std::vector<nlohmann::json> a = test::read_metrics(dir.file("whole.jsonl")), b = test::read_metrics(dir.file("resumed.jsonl"));
  REQUIRE(a.size() == 6);
  REQUIRE(b.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(b[i]["step"] == a[3 + i]["step"]);
    CHECK(b[i]["loss"] == a[3 + i]["loss"]);
  }
  // With --no-save: it stops and says that nothing was saved.
  Run unsaved = test::run_command("env FLEXTP_FAULT_SIGNAL=0:2:2 " + test::train_binary() + " " + base + " --no-save");
  CHECK(unsaved.status == 130);
  CHECK(has(unsaved.output, "stopped by SIGINT after step 2 (nothing saved: --no-save)"));
}

TEST_CASE("a second signal ends the run at once, even in the middle of its save") {
  test::TempDir dir("sigtwice");
  const std::string m = dir.file("m.st"), log = dir.file("log.txt");
  // The first signal in step 2; its save then takes a minute (a slow disk).
  pid_t pid = start_train("FLEXTP_FAULT_SIGNAL=0:2:15 FLEXTP_FAULT_SLOW_SAVE_MS=60000",
                          std::string(kTiny) + " --data " + test::corpus(dir) + " --steps 10 --save " + m, log);
  REQUIRE(wait_for([&] { return has(test::read_bytes(log), "stopping after this step"); }));
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  INFO(test::read_bytes(log));
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK_FALSE(has(test::read_bytes(log), "stopped by"));
  CHECK_FALSE(std::filesystem::exists(m));
}

TEST_CASE("under mpirun a signal that reaches one rank stops every rank after the same step") {
  test::TempDir dir("sigmpi");
  const std::string m = dir.file("m.st"), metrics = dir.file("m.jsonl");
  // Only rank 1 gets SIGTERM, as step 3 begins: every rank learns of it in step 3's exchange.
  Run r = test::run_command("timeout 120 " + test::mpirun() + " -np 2 -x OMP_NUM_THREADS=1 -x FLEXTP_FAULT_SIGNAL=1:3:15 " +
                            test::train_binary() + " " + kTiny + " --data " + test::corpus(dir) +
                            " --steps 8 --save " + m + " --metrics " + metrics);
  INFO(r.output);
  CHECK(r.status != 0);
  CHECK(r.status != 124);  // no hang
  CHECK_FALSE(has(r.output, "train: error"));
  CHECK(has(r.output, "stopped by SIGTERM after step 3; resume with --load " + m));
  CHECK(test::read_metrics(metrics).size() == 3);
  CHECK(saved_step(m) == 3);
  // Two replicas of one rank (--tp 1): the request crosses from replica 1 to replica 0.
  Run dp = test::run_command("timeout 120 " + test::mpirun() + " -np 2 -x OMP_NUM_THREADS=1 -x FLEXTP_FAULT_SIGNAL=1:2:2 " +
                             test::train_binary() + " " + kTiny + " --tp 1 --data " + test::corpus(dir) + " --steps 8 --save " +
                             m + " --metrics " + dir.file("dp.jsonl"));
  INFO(dp.output);
  CHECK(dp.status != 0);
  CHECK(dp.status != 124);
  CHECK(has(dp.output, "stopped by SIGINT after step 2; resume with --load " + m));
  CHECK(test::read_metrics(dir.file("dp.jsonl")).size() == 2);
  CHECK(saved_step(m) == 2);
}

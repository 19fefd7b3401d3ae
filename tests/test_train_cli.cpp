// The train binary end to end: exact resume, evaluation of a checkpoint, and clear errors for
// bad flags, files and configurations.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/safetensors.h"
#include "tests/gpu_skip.h"
#include "tests/gradcheck.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;
using test::Run;
using test::run_train;

using test::corpus;
using test::kTiny;

TEST_CASE("10 steps equal 5 steps + save + load + 5 steps, bitwise") {
  test::TempDir dir("resume");
  std::string data = corpus(dir);
  std::string base = std::string(kTiny) + " --data " + data + " --steps 10 --dropout 0.1";
  Run full = run_train(base + " --save " + dir.file("full.st") + " --save-every 5");
  REQUIRE_MESSAGE(full.status == 0, full.output);
  // The run also left its step-5 checkpoint beside the final one: resume from it.
  Run resumed = run_train(base + " --load " + dir.file("full-step000005.st") + " --save " +
                          dir.file("resumed.st"));
  REQUIRE_MESSAGE(resumed.status == 0, resumed.output);
  // Every byte of every tensor, and the metadata but the id each save draws.
  for (const char* file : {".st", ".st.state"}) {
    SafetensorsFile a = read_safetensors(dir.file(std::string("resumed") + file));
    SafetensorsFile b = read_safetensors(dir.file(std::string("full") + file));
    CHECK(a.metadata.at("save_id") != b.metadata.at("save_id"));
    a.metadata.erase("save_id"), b.metadata.erase("save_id");
    CHECK(a.metadata == b.metadata);
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (const auto& [name, t] : b.tensors) {
      REQUIRE(a.tensors.count(name) == 1);
      CHECK(a.tensors.at(name).nbytes() == t.nbytes());
      CHECK(std::memcmp(a.tensors.at(name).raw(), t.raw(), t.nbytes()) == 0);
    }
  }
}

TEST_CASE("a resumed run keeps the seed of its checkpoint; another --seed is refused") {
  test::TempDir dir("seed");
  std::string base = std::string(kTiny) + " --data " + corpus(dir) + " --dropout 0.1 --steps 6 --metrics ";
  REQUIRE(run_train(base + dir.file("full.jsonl") + " --seed 7 --save-every 3 --save " + dir.file("m.st")).status == 0);
  // Without --seed the checkpoint's seed goes on: the same batches and dropout masks, bitwise.
  Run resumed = run_train(base + dir.file("resumed.jsonl") + " --load " + dir.file("m-step000003.st"));
  REQUIRE_MESSAGE(resumed.status == 0, resumed.output);
  const std::string said = "resumed " + dir.file("m-step000003.st") + " at step 3 with its seed 7\n";
  CHECK(resumed.output.find(said) != std::string::npos);
  CHECK(resumed.output.find(said) == resumed.output.rfind(said));  // said once
  std::vector<nlohmann::json> full = test::read_metrics(dir.file("full.jsonl"));
  std::vector<nlohmann::json> rest = test::read_metrics(dir.file("resumed.jsonl"));
  REQUIRE(full.size() == 6);
  REQUIRE(rest.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(rest[i]["loss"] == full[3 + i]["loss"]);
  // The same seed given again is fine; another one is an error, before any step.
  CHECK(run_train(base + dir.file("same.jsonl") + " --seed 7 --load " + dir.file("m-step000003.st")).status == 0);
  Run other = run_train(base + dir.file("other.jsonl") + " --seed 8 --load " + dir.file("m-step000003.st"));
  CHECK(other.status == 1);
  CHECK_MESSAGE(other.output.find("train: error: --seed 8 differs from the 7 of checkpoint " + dir.file("m-step000003.st") +
                                  ": a resumed run keeps it") != std::string::npos, other.output);
  CHECK(!std::filesystem::exists(dir.file("other.jsonl")));
}

TEST_CASE("a resumed run keeps its checkpoint's seed when the matching state is only in PATH.state.next") {
  test::TempDir dir("seednext");
  const std::string flags = std::string(kTiny) + " --data " + corpus(dir) + " --dropout 0.1 --steps 12";
  const std::string base = flags + " --seed 7 --metrics ";
  REQUIRE(run_train(base + dir.file("full.jsonl")).status == 0);  // uninterrupted
  // The same run saving every 4 steps, killed right after step 8's weights took their place
  // (writes: step 4's state and weights, step 8's state as .state.next, step 8's weights): the
  // state that matches them is in m-step000008.st.state.next only.
  const std::string m = dir.file("m-step000008.st");
  Run killed = test::run_command("env FLEXTP_FAULT_KILL_AFTER_WRITE=4 " + test::train_binary() + " " + base +
                                 dir.file("killed.jsonl") + " --save-every 4 --save " + dir.file("m.st"));
  REQUIRE_MESSAGE(killed.status == 137, killed.output);
  REQUIRE(std::filesystem::exists(m));
  REQUIRE(!std::filesystem::exists(m + ".state"));
  REQUIRE(std::filesystem::exists(m + ".state.next"));
  // Without --seed: seed 7 from m-step000008.st.state.next, not the default seed, so the
  // batches and dropout masks of steps 9-12 follow the uninterrupted run's, bitwise.
  Run resumed = run_train(flags + " --metrics " + dir.file("rest.jsonl") + " --load " + m);
  REQUIRE_MESSAGE(resumed.status == 0, resumed.output);
  CHECK_MESSAGE(resumed.output.find("resumed " + m + " at step 8 with its seed 7\n") != std::string::npos, resumed.output);
  std::vector<nlohmann::json> full = test::read_metrics(dir.file("full.jsonl"));
  std::vector<nlohmann::json> rest = test::read_metrics(dir.file("rest.jsonl"));
  REQUIRE(full.size() == 12);
  REQUIRE(rest.size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(rest[i]["loss"] == full[8 + i]["loss"]);
}

TEST_CASE("--eval-only prints the loss of a checkpoint on a file, windows in order") {
  test::TempDir dir("eval");
  std::string data = corpus(dir);
  REQUIRE(run_train(std::string(kTiny) + " --data " + data + " --steps 3 --save " + dir.file("m.st")).status == 0);
  Run a = run_train("--eval-only --load " + dir.file("m.st") + " --data " + data + " --seq-len 16 --batch 2 --eval-batches 3");
  REQUIRE_MESSAGE(a.status == 0, a.output);
  CHECK(a.output.find("6 windows of 16 tokens") != std::string::npos);
  CHECK(a.output.find("loss ") != std::string::npos);
  Run b = run_train("--eval-only --load " + dir.file("m.st") + " --data " + data + " --seq-len 16 --batch 3 --eval-batches 2");
  CHECK(a.output.substr(a.output.find("loss ")) == b.output.substr(b.output.find("loss ")));
}

TEST_CASE("bad flags, files and configurations end with a clear message and status 1") {
  test::TempDir dir("badcli");
  std::string data = corpus(dir);
  auto fails_with = [&](const std::string& args, const std::string& message) {
    Run r = run_train(args);
    INFO(args, "\n", r.output);
    CHECK(r.status == 1);
    CHECK(r.output.find("train: error: ") != std::string::npos);
    CHECK(r.output.find(message) != std::string::npos);
  };
  // Flags CLI11 refuses read like every other error: its message after "train: error: ".
  fails_with("--optimizer adam", "train: error: --optimizer: adam not in {adamw,sgd}");
  fails_with("--no-such-flag", "train: error: unknown flag --no-such-flag");
  fails_with("--steps", "train: error: --steps: 1 required");
  fails_with("--steps x", "train: error: --steps: 'x' is not a whole number");
  Run help = run_train("--help");
  CHECK(help.status == 0);
  CHECK(help.output.find("Usage: ") != std::string::npos);
  CHECK(help.output.find("--tp-weights") != std::string::npos);
  CHECK(help.output.find("error") == std::string::npos);
  fails_with("--steps -3", "--steps");
  fails_with("--batch 0", "--batch");
  fails_with("--no-such-flag", "no-such-flag");
  fails_with("--optimizer adam", "--optimizer");
  fails_with("--data " + dir.file("missing.txt"), "cannot open data file");
  fails_with("--data " + dir.write("short.txt", "tiny") + " --seq-len 16", "fewer than seq_len + 1");
  fails_with("--data " + data + " --n-embd 10 --n-head 4", "not divisible by --n-head");
  fails_with("--data " + data + " --seq-len 64 --n-positions 32", "--seq-len 64 exceeds n_positions 32");
  fails_with("--data " + data + " --vocab 50", "outside the vocabulary of 50");
  fails_with("--eval-only --data " + data, "--eval-only needs --load");
  fails_with("--load " + dir.file("nothing.st"), "cannot open checkpoint file");
  fails_with("--load " + dir.write("junk.st", "garbage that is long enough"), "header length");
  REQUIRE(run_train(std::string(kTiny) + " --data " + data + " --steps 1 --save " + dir.file("m.st")).status == 0);
  fails_with("--load " + dir.file("m.st") + " --n-embd 32 --data " + data, "--n-embd 32 differs from the 16");
  fails_with("--tokenizer words", "--tokenizer");
  {
    test::ScopedEnv empty_cache("XDG_CACHE_HOME", dir.file("no-cache"));
    fails_with("--tokenizer gpt2 --data " + data, "no --tokenizer-dir was given");
  }
  fails_with("--tokenizer gpt2 --tokenizer-dir " + dir.file("nowhere") + " --data " + data, "has no encoder.json");
  fails_with("--keep-last -1", "--keep-last");
  fails_with("--max-bad-steps 0", "--max-bad-steps");
  fails_with("--rank-timeout 0", "--rank-timeout");
  fails_with("--fault-kill 0 --data " + data, "--fault-kill '0' must be RANK:STEP");
  fails_with("--fault-hang 3:1 --data " + data, "--fault-hang names rank 3 but there are only 1");
  fails_with("--fault-nan-steps x", "--fault-nan-steps");
  fails_with("--device gpu", "unknown device 'gpu' (expected cpu, cuda or cuda:N)");
  fails_with("--comm-backend gloo", "--comm-backend");
  fails_with("--comm-backend nccl --data " + data, "--comm-backend nccl needs --device cuda");
  fails_with("--attention flash", "--attention");
  fails_with("--attention cudnn --data " + data, "--attention cudnn needs --device cuda");
  fails_with("--bf16 --data " + data, "--bf16 needs --device cuda");
  fails_with("--bf16 --tf32 --data " + data, "--bf16 and --tf32 exclude each other");
  fails_with("--tp 2 --data " + data, "--tp: a tensor-parallel group of 2 ranks needs at least 2 ranks; this run has 1");
  fails_with("--tp 0", "--tp");
  fails_with("--batch 8 --micro-batch 3 --data " + data, "--micro-batch: a micro-batch of 3 windows does not divide");
  fails_with("--batch 2 --micro-batch 4 --data " + data, "--micro-batch: a micro-batch of 4 windows does not divide");
  fails_with("--dp-bucket-mb 0", "--dp-bucket-mb");
  if (!test::gpu_present()) {  // without a GPU (or CUDA) the flag says why it cannot be honoured
    fails_with("--device cuda --data " + data, "--device cuda: ");
    fails_with("--device cuda:1 --data " + data, "--device cuda:1: ");
  }
  fails_with(std::string(kTiny) + " --data " + data + " --steps 1 --export-hf /proc/flextp",
             "--export-hf /proc/flextp (to be created in /proc): cannot write there");
  if (std::filesystem::exists(FLEXTP_SOURCE_DIR "/../shared/gpt2/vocab.bpe"))
    fails_with("--load " + dir.file("m.st") + " --seq-len 16 --tokenizer gpt2 --tokenizer-dir " FLEXTP_SOURCE_DIR "/../shared/gpt2 --data " + data,
               "--tokenizer gpt2 differs from the byte of checkpoint");
}

TEST_CASE("--mlp swiglu trains and resumes with its checkpoint's kind; --export-hf and another --mlp are refused") {
  test::TempDir dir("mlpkind");
  std::string base = std::string(kTiny) + " --data " + corpus(dir);
  Run trained = run_train(base + " --mlp swiglu --steps 2 --save " + dir.file("m.st"));
  REQUIRE_MESSAGE(trained.status == 0, trained.output);
  CHECK(trained.output.find("mlp swiglu") != std::string::npos);
  // The checkpoint decides the kind: no --mlp needed to resume; the same one given is fine.
  Run resumed = run_train(base + " --steps 3 --load " + dir.file("m.st"));
  CHECK_MESSAGE(resumed.status == 0, resumed.output);
  CHECK(run_train(base + " --steps 3 --mlp swiglu --load " + dir.file("m.st")).status == 0);
  Run other = run_train(base + " --steps 3 --mlp gelu --load " + dir.file("m.st"));
  CHECK(other.status == 1);
  CHECK_MESSAGE(other.output.find("train: error: --mlp gelu differs from the swiglu of checkpoint " + dir.file("m.st")) !=
                    std::string::npos,
                other.output);
  // Refused before the first step, not after the whole run.
  Run exported = run_train(base + " --mlp swiglu --steps 2 --metrics " + dir.file("x.jsonl") + " --export-hf " + dir.file("hf"));
  CHECK(exported.status == 1);
  CHECK_MESSAGE(exported.output.find("train: error: --export-hf: a model with the swiglu MLP is not GPT-2") != std::string::npos,
                exported.output);
  CHECK(!std::filesystem::exists(dir.file("x.jsonl")));
  CHECK(!std::filesystem::exists(dir.file("hf")));
  Run unknown = run_train("--mlp relu");
  CHECK(unknown.status == 1);
  CHECK_MESSAGE(unknown.output.find("train: error: --mlp: relu not in {gelu,swiglu}") != std::string::npos, unknown.output);
}

TEST_CASE("under mpirun, a bad partition stops every rank with a clear message, never a hang") {
  test::TempDir dir("mpicli");
  std::string data = corpus(dir);
  std::string mpirun = std::string(FLEXTP_MPIRUN) + " -np 2 " + FLEXTP_TRAIN_BINARY;
  auto fails_with = [&](const std::string& args, const std::string& message) {
    std::string cmd = "timeout 120 " + mpirun + " " + args + " --data " + data + " --steps 1";
    Run r = test::run_command(cmd);
    const int status = r.status;
    const std::string out = r.output;
    INFO(cmd, "\n", out);
    CHECK(status > 0);
    CHECK(status != 124);  // not the timeout
    CHECK(out.find(message) != std::string::npos);
  };
  fails_with("--tp-weights 1,1,1", "has 3 weights for 2 ranks");
  fails_with("--tp-weights 1,0", "must be positive");
  fails_with("--tp-assign 'expert=0|1'", "unknown unit kind 'expert'");
  fails_with("--tp-assign 'head=0,1|1,2,3'", "owned twice");
  fails_with("--tp-assign 'head=0|1,2'", "owned by no rank");
  fails_with("--straggler 1:fast", "'fast' is not a number");
  fails_with("--straggler 5:2", "names rank 5 but there are only 2 ranks");
  fails_with("--straggler-trace " + dir.write("bad.csv", "0,1\n"), "expected step and 2 factors");
  fails_with("--straggler-trace " + dir.file("none.csv"),
             "--straggler-trace: cannot open straggler trace file " + dir.file("none.csv"));
  fails_with("--comm fastest", "--comm");
  fails_with("--balance shrink", "--balance");
  fails_with("--priority loud", "--priority");
  fails_with("--lambda -1", "--lambda: '-1' must be a number >= 0 or inf");
  fails_with("--lambda lots", "--lambda: 'lots'");
  fails_with("--contend 1", "RANK:THREADS");
}

TEST_CASE("under mpirun, a grid that does not fit its ranks stops with a clear message") {
  test::TempDir dir("gridcli");
  std::string data = corpus(dir);
  auto fails_with = [&](const std::string& args, const std::string& message) {
    std::string cmd = "timeout 120 " + std::string(FLEXTP_MPIRUN) + " -np 4 -x OMP_NUM_THREADS=1 " +
                      FLEXTP_TRAIN_BINARY + " " + kTiny + " " + args + " --data " + data + " --steps 1";
    Run r = test::run_command(cmd);
    INFO(cmd, "\n", r.output);
    CHECK(r.status > 0);
    CHECK(r.status != 124);  // not the timeout
    CHECK(r.output.find(message) != std::string::npos);
  };
  fails_with("--tp 3", "--tp: a tensor-parallel group of 3 ranks does not divide the 4 ranks of this run into replicas");
  fails_with("--tp 1", "--batch: a batch of 2 windows does not split evenly over 4 replicas");  // kTiny's batch
  fails_with("--tp 2 --tp-assign 'head=0|1|'",
             "(--tp 2: --tp-weights and --tp-assign name the 2 ranks of one tensor-parallel group");
  // A trace has a column per rank of the world, whatever the grid.
  fails_with("--tp 2 --straggler-trace " + dir.write("two.csv", "0,1,2\n"), "expected step and 4 factors, got 3 fields");
}

using test::read_metrics;

TEST_CASE("micro-steps and data x tensor parallel grids follow one process's curve") {
  test::TempDir dir("grid");
  std::string data = corpus(dir);
  std::string model = "--n-layer 1 --n-head 2 --n-embd 16 --mlp-unit 16 --seq-len 16 --batch 8 --steps 6 --warmup 2 "
                      "--log-every 100 --eval-every 0 --eval-batches 1 --data " + data;
  auto run = [&](const std::string& launcher, const std::string& args, const std::string& name) {
    std::string metrics = dir.file(name + ".jsonl");
    Run r = test::run_command("timeout 300 " + launcher + FLEXTP_TRAIN_BINARY + " " + model + " " + args + " --metrics " + metrics);
    INFO(launcher, args, "\n", r.output);
    REQUIRE(r.status == 0);
    std::vector<nlohmann::json> rows = read_metrics(metrics);
    REQUIRE(rows.size() == 6);
    return rows;
  };
  std::vector<nlohmann::json> one = run("", "", "one");
  // The same windows in micro-steps of 2: the same mean, summed in another order.
  std::vector<nlohmann::json> micro = run("", "--micro-batch 2", "micro");
  for (size_t s = 0; s < one.size(); ++s) {
    INFO("step ", s + 1);
    CHECK(micro[s]["loss"].get<double>() == doctest::Approx(one[s]["loss"].get<double>()).epsilon(1e-5));
    CHECK(micro[s]["grad_norm"].get<double>() == doctest::Approx(one[s]["grad_norm"].get<double>()).epsilon(1e-4));
  }
  // 2 replicas of 2 ranks, uneven units, micro-steps of 2, and a straggler the balancer may move
  // units away from (in both replicas alike); then 4 replicas of one rank.
  std::string mpirun = std::string(FLEXTP_MPIRUN) + " -np 4 -x OMP_NUM_THREADS=1 ";
  std::vector<nlohmann::json> grid =
      run(mpirun, "--tp 2 --tp-weights 3,1 --micro-batch 2 --balance migrate --straggler 1:4:2", "grid");
  std::vector<nlohmann::json> data_parallel = run(mpirun, "--tp 1", "data_parallel");
  for (size_t s = 0; s < one.size(); ++s) {
    INFO("step ", s + 1);
    CHECK(std::abs(grid[s]["loss"].get<double>() - one[s]["loss"].get<double>()) < 1e-4);
    CHECK(std::abs(data_parallel[s]["loss"].get<double>() - one[s]["loss"].get<double>()) < 1e-4);
    CHECK(grid[s]["grid"]["dp"] == 2);
    CHECK(data_parallel[s]["grid"]["tp"] == 1);
  }
}

namespace {
// Step by step, the losses of `got` equal those of `want` within a relative epsilon.
void check_losses_follow(const std::vector<nlohmann::json>& got, const std::vector<nlohmann::json>& want,
                         double epsilon) {
  for (size_t s = 0; s < want.size(); ++s)
    CHECK(got[s]["loss"].get<double>() == doctest::Approx(want[s]["loss"].get<double>()).epsilon(epsilon));
}

// `args` on `ranks` ranks sharing the one GPU over the MPI backend (NCCL refuses two ranks per
// GPU); false, said as a skipped GPU case, where there is no mpirun.
bool gpu_ranks(int ranks, const std::string& args, const std::string& metrics, std::vector<nlohmann::json>& rows) {
  if (test::run_command(test::mpirun() + " --version").status != 0) {
    test::report_gpu_skip("no mpirun here", "the GPU cases of several ranks");
    return false;
  }
  Run r = test::run_command("timeout 300 " + test::mpirun() + " -np " + std::to_string(ranks) + " -x OMP_NUM_THREADS=1 " +
                            test::train_binary() + " " + args + " --device cuda --comm-backend mpi");
  INFO(r.output);
  REQUIRE(r.status == 0);
  rows = read_metrics(metrics);
  return true;
}

// Some step moved units between ranks.
bool migrated(const std::vector<nlohmann::json>& rows) {
  for (const auto& row : rows)
    if (row.value("moved_bytes", 0.0) > 0) return true;
  return false;
}
}  // namespace

TEST_CASE("on the GPU, training follows the CPU run step by step (skipped without a GPU)") {
  if (test::skip_without_gpu()) return;
  test::TempDir dir("gpu");
  std::string data = corpus(dir);
  std::string base = std::string(kTiny) + " --steps 8 --data " + data + " --dropout 0.1 --metrics ";
  REQUIRE(run_train(base + dir.file("cpu.jsonl") + " --save " + dir.file("cpu.st")).status == 0);
  Run gpu = run_train(base + dir.file("gpu.jsonl") + " --device cuda --save " + dir.file("gpu.st"));
  INFO(gpu.output);
  REQUIRE(gpu.status == 0);
  CHECK(gpu.output.find("on cuda:0") != std::string::npos);
  std::vector<nlohmann::json> a = read_metrics(dir.file("cpu.jsonl")), b = read_metrics(dir.file("gpu.jsonl"));
  REQUIRE(a.size() == 8);
  REQUIRE(b.size() == 8);
  check_losses_follow(b, a, 1e-4);
  // A GPU checkpoint resumes on the CPU, weights and optimizer state: steps 9 and 10 follow those
  // resumed from the CPU run's checkpoint (step 10's loss is the first to see the Adam state; a
  // large learning rate makes it show).
  std::string resume = std::string(kTiny) + " --steps 10 --lr 1e-2 --min-lr 1e-2 --data " + data + " --dropout 0.1 --load ";
  Run from_gpu = run_train(resume + dir.file("gpu.st") + " --metrics " + dir.file("gpu-resumed.jsonl"));
  INFO(from_gpu.output);
  REQUIRE(from_gpu.status == 0);
  CHECK(from_gpu.output.find("step    10 | loss ") != std::string::npos);
  REQUIRE(run_train(resume + dir.file("cpu.st") + " --metrics " + dir.file("cpu-resumed.jsonl")).status == 0);
  std::vector<nlohmann::json> on_cpu = read_metrics(dir.file("gpu-resumed.jsonl")),
                              cpu_only = read_metrics(dir.file("cpu-resumed.jsonl"));
  REQUIRE(on_cpu.size() == 2);
  REQUIRE(cpu_only.size() == 2);
  CHECK(on_cpu[0]["step"] == 9);
  check_losses_follow(on_cpu, cpu_only, 1e-4);
  // Two ranks sharing the one GPU, over MPI (NCCL refuses two ranks per GPU), one tensor-parallel
  // group whose slow rank hands units over: the same losses.
  std::vector<nlohmann::json> c;
  // --contend's noisy neighbour (spin kernels beside rank 0) changes timings, not losses.
  if (!gpu_ranks(2, base + dir.file("tp2.jsonl") + " --tp 2 --balance migrate --straggler 1:4:3 --contend 0:1",
                 dir.file("tp2.jsonl"), c))
    return;
  REQUIRE(c.size() == 8);
  check_losses_follow(c, a, 1e-4);
  CHECK(migrated(c));
}

TEST_CASE("on the GPU, ranks sharing it over MPI: a 2 x 2 grid with a migration, and resizing by the hybrid, follow the CPU") {
  if (test::skip_without_gpu()) return;
  test::TempDir dir("gpu-ranks");
  std::string data = corpus(dir);
  // SwiGLU's MLP units on the GPU too.
  std::string base = std::string(kTiny) + " --mlp swiglu --steps 8 --data " + data + " --metrics ";
  REQUIRE(run_train(base + dir.file("cpu.jsonl")).status == 0);
  std::vector<nlohmann::json> cpu = read_metrics(dir.file("cpu.jsonl")), grid, hybrid, hybrid_cpu;
  REQUIRE(cpu.size() == 8);
  // Two replicas of two ranks: units move in the slow rank's replica, and the gradient sum
  // exchanges them between the replicas' partitions (GradientSync on the device), in buckets of
  // 4 KB.
  if (!gpu_ranks(4, base + dir.file("grid.jsonl") + " --tp 2 --balance migrate --straggler 1:4:3 --dp-bucket-mb 0.004",
                 dir.file("grid.jsonl"), grid))
    return;
  REQUIRE(grid.size() == 8);
  check_losses_follow(grid, cpu, 1e-4);
  CHECK(grid.back()["grid"]["dp"] == 2);
  CHECK(grid.back().value("dp_sync_buckets", int64_t{0}) > 2);  // several device buckets packed and unpacked
  CHECK(migrated(grid));
  // The hybrid skips units of the slow rank (active rows, GEMMs of k = 0 for empty ranks): the
  // model changes with what it skips, which follows the timings, so the CPU runs the same
  // command and the losses agree until either run skips, and stay near after.
  std::string resize = "--n-layer 2 --n-head 2 --n-embd 16 --mlp-unit 16 --seq-len 16 --batch 8 --log-every 100 "
                       "--eval-every 0 --eval-batches 2 --warmup 2 --tp 2 --steps 12 --straggler 1:4:3 --balance hybrid "
                       "--lambda 0 --data " + data + " --metrics ";
  std::string cpu_cmd = "timeout 300 " + test::mpirun() + " -np 2 -x OMP_NUM_THREADS=1 " + test::train_binary() + " " +
                        resize + dir.file("hybrid_cpu.jsonl");
  Run on_cpu = test::run_command(cpu_cmd);
  INFO(on_cpu.output);
  REQUIRE(on_cpu.status == 0);
  hybrid_cpu = read_metrics(dir.file("hybrid_cpu.jsonl"));
  if (!gpu_ranks(2, resize + dir.file("hybrid.jsonl"), dir.file("hybrid.jsonl"), hybrid)) return;
  REQUIRE(hybrid.size() == 12);
  REQUIRE(hybrid_cpu.size() == 12);
  auto skipped = [](const nlohmann::json& row) {
    double n = 0;
    for (const auto& rank : row["ranks"]) n += rank["units"]["skipped"].get<double>();
    return n;
  };
  bool resized = false;
  for (size_t s = 0; s < hybrid.size(); ++s) {
    INFO("step ", s + 1);
    resized = resized || skipped(hybrid[s]) > 0 || skipped(hybrid_cpu[s]) > 0;
    const double want = hybrid_cpu[s]["loss"].get<double>();
    CHECK(hybrid[s]["loss"].get<double>() == doctest::Approx(want).epsilon(resized ? 0.05 : 1e-4));
  }
  bool gpu_skipped = false;
  for (const auto& row : hybrid) gpu_skipped = gpu_skipped || skipped(row) > 0;
  CHECK(gpu_skipped);  // the GPU run did resize
}

TEST_CASE("on the GPU, --attention cudnn and --bf16 train like f32, within bf16 rounding") {
  if (test::skip_without_gpu()) return;
  test::TempDir dir("gpu-cudnn");
  std::string data = corpus(dir);
  // Head size 64 and 128 positions: a case cuDNN's fused attention has engines for.
  std::string base = "--n-layer 2 --n-head 2 --n-embd 128 --mlp-unit 64 --seq-len 128 --batch 4 --steps 12 "
                     "--log-every 100 --eval-every 0 --eval-batches 2 --warmup 2 --device cuda --data " + data + " --metrics ";
  Run own = run_train(base + dir.file("own.jsonl"));
  INFO(own.output);
  REQUIRE(own.status == 0);
  Run fused = run_train(base + dir.file("cudnn.jsonl") + " --attention cudnn");
  INFO(fused.output);
  REQUIRE(fused.status == 0);
  CHECK(fused.output.find("attention on cuDNN") != std::string::npos);
  std::vector<nlohmann::json> a = read_metrics(dir.file("own.jsonl")), b = read_metrics(dir.file("cudnn.jsonl"));
  REQUIRE(a.size() == 12);
  REQUIRE(b.size() == 12);
  check_losses_follow(b, a, 2e-2);
  // bf16 matmuls too (every GEMM's inputs rounded to bf16), which bring cuDNN's attention along.
  Run bf16 = run_train(base + dir.file("bf16.jsonl") + " --bf16");
  INFO(bf16.output);
  REQUIRE(bf16.status == 0);
  CHECK(bf16.output.find("(bf16 matmuls)") != std::string::npos);
  CHECK(bf16.output.find("attention on cuDNN") != std::string::npos);
  CHECK(own.output.find("attention on own kernels") != std::string::npos);
  std::vector<nlohmann::json> c = read_metrics(dir.file("bf16.jsonl"));
  REQUIRE(c.size() == 12);
  check_losses_follow(c, a, 3e-2);
}

TEST_CASE("a straggler with --balance migrate: units move to the fast ranks, losses do not change" * doctest::test_suite("wallclock")) {
  test::TempDir dir("hetero");
  std::string data = corpus(dir);
  for (int ranks : {2, 4}) {
    INFO(ranks, " ranks");
    std::string base = "timeout 300 " + std::string(FLEXTP_MPIRUN) + " -np " + std::to_string(ranks) +
                       " -x OMP_NUM_THREADS=1 " + FLEXTP_TRAIN_BINARY +
                       " --n-layer 2 --n-head 4 --n-embd 64 --seq-len 32 --batch 8 --steps 16 --eval-every 0"
                       " --eval-batches 1 --log-every 100 --data " + data;
    std::string plain = dir.file("plain" + std::to_string(ranks) + ".jsonl");
    std::string moved = dir.file("moved" + std::to_string(ranks) + ".jsonl");
    REQUIRE(std::system((base + " --metrics " + plain + " > /dev/null 2>&1").c_str()) == 0);
    // 4 ranks share 2 cores: ranks waiting inside collectives are descheduled by the others, and
    // those waits (tens of ms a step) dwarf this tiny model's ~3 ms of compute, so a 4x
    // straggler's saving can fall under the 10% least gain (a sanitizer build in CI did not
    // move). At 16x the compute saved is what decides.
    std::string slow = " --straggler " + std::to_string(ranks - 1) + (ranks == 2 ? ":4:3" : ":16:3") + " --balance migrate";
    REQUIRE(std::system((base + slow + " --metrics " + moved + " > /dev/null 2>&1").c_str()) == 0);
    std::vector<nlohmann::json> a = read_metrics(plain), b = read_metrics(moved);
    REQUIRE(a.size() == 16);
    REQUIRE(b.size() == 16);
    bool migrated = false;
    for (size_t s = 0; s < a.size(); ++s) {
      CHECK(std::abs(a[s]["loss"].get<double>() - b[s]["loss"].get<double>()) < 1e-4);
      migrated = migrated || b[s]["plan"] == "migrate";
    }
    CHECK(migrated);
    // At the end the slow rank holds fewer units than a fast one (units per kind: head, mlp, vocab).
    const nlohmann::json& last = b.back()["ranks"];
    double slow_units = 0, fast_units = 0;
    for (double u : last[ranks - 1]["units"]) slow_units += u;
    for (double u : last[0]["units"]) fast_units += u;
    CHECK(slow_units < fast_units);
  }
}

TEST_CASE("a straggler in one replica of a 2 x 2 grid: every replica moves the same units, losses do not change" * doctest::test_suite("wallclock")) {
  test::TempDir dir("gridhetero");
  std::string data = corpus(dir);
  std::string base = "timeout 300 " + std::string(FLEXTP_MPIRUN) + " -np 4 -x OMP_NUM_THREADS=1 " + FLEXTP_TRAIN_BINARY +
                     " --n-layer 2 --n-head 4 --n-embd 64 --seq-len 32 --batch 8 --steps 12 --eval-every 0"
                     " --eval-batches 1 --log-every 100 --tp 2 --data " + data;
  std::string plain = dir.file("plain.jsonl"), moved = dir.file("moved.jsonl");
  REQUIRE(std::system((base + " --metrics " + plain + " > /dev/null 2>&1").c_str()) == 0);
  // World rank 1: tensor rank 1 of replica 0 alone is slow. Replica 1's balancer must still take
  // the same decision (or the run stops: the partitions would differ).
  Run r = test::run_command(base + " --straggler 1:4:3 --balance migrate --metrics " + moved);
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::vector<nlohmann::json> a = read_metrics(plain), b = read_metrics(moved);
  REQUIRE(a.size() == 12);
  REQUIRE(b.size() == 12);
  bool migrated = false;
  for (size_t s = 0; s < a.size(); ++s) {
    CHECK(std::abs(a[s]["loss"].get<double>() - b[s]["loss"].get<double>()) < 1e-4);
    migrated = migrated || b[s]["plan"] == "migrate";
  }
  CHECK(migrated);
}

TEST_CASE("a straggler trace on a 2 x 2 grid names world ranks: replica 1 slowed takes fewer windows, losses do not change" * doctest::test_suite("wallclock")) {
  test::TempDir dir("gridtrace");
  std::string data = corpus(dir);
  std::string base = "timeout 300 " + std::string(FLEXTP_MPIRUN) + " -np 4 -x OMP_NUM_THREADS=1 " + FLEXTP_TRAIN_BINARY +
                     " --n-layer 2 --n-head 4 --n-embd 64 --seq-len 32 --batch 8 --steps 12 --eval-every 0"
                     " --eval-batches 1 --log-every 100 --tp 2 --balance migrate --data " + data;
  std::string plain = dir.file("plain.jsonl"), traced = dir.file("traced.jsonl");
  REQUIRE(std::system((base + " --metrics " + plain + " > /dev/null 2>&1").c_str()) == 0);
  // A column per world rank: world rank 3, tensor rank 1 of replica 1, is slowed 4x from step 4.
  std::string trace = dir.write("trace.csv", "step,r0,r1,r2,r3\n0,1,1,1,1\n4,1,1,1,4\n");
  Run r = test::run_command(base + " --straggler-trace " + trace + " --metrics " + traced);
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::vector<nlohmann::json> a = read_metrics(plain), b = read_metrics(traced);
  REQUIRE(a.size() == 12);
  REQUIRE(b.size() == 12);
  for (size_t s = 0; s < a.size(); ++s)
    CHECK(std::abs(a[s]["loss"].get<double>() - b[s]["loss"].get<double>()) < 1e-4);
  // Rank 0 logs its own replica's table; the replicas' windows show where the slow rank is: in
  // replica 1 (had every replica taken columns 0 and 1, replica 0 would be the slow one).
  const nlohmann::json& replicas = b.back()["replicas"];
  REQUIRE(replicas.size() == 2);
  CHECK(replicas[1]["windows"].get<int64_t>() < replicas[0]["windows"].get<int64_t>());
}

TEST_CASE("a straggler with --balance resize or hybrid: the slow rank skips units from the next step on" * doctest::test_suite("wallclock")) {
  test::TempDir dir("resize");
  std::string data = corpus(dir);
  for (const std::string policy : {"resize", "hybrid --lambda 0"}) {
    INFO(policy);
    std::string m = dir.file("m.jsonl");
    std::filesystem::remove(m);
    std::string cmd = "timeout 300 " + std::string(FLEXTP_MPIRUN) + " -np 2 -x OMP_NUM_THREADS=1 " + FLEXTP_TRAIN_BINARY +
                      " --n-layer 2 --n-head 4 --n-embd 64 --seq-len 32 --batch 8 --steps 20 --eval-every 0 --eval-batches 1"
                      " --log-every 100 --data " + data + " --straggler 1:4:5 --balance " + policy + " --metrics " + m;
    Run r = test::run_command(cmd);
    REQUIRE_MESSAGE(r.status == 0, r.output);
    std::vector<nlohmann::json> rows = read_metrics(m);
    REQUIRE(rows.size() == 20);
    auto skipped = [&](int step, int rank) { return rows[step - 1]["ranks"][rank]["units"]["skipped"].get<double>(); };
    std::string plans;  // what each step did, for the message should a check fail
    for (const auto& row : rows) plans += std::string(row.value("plan", "-")) + " ";
    INFO("plans by step: ", plans);
    // A row's plan is what the balancer chose after that step, so it governs the next step.
    auto plan_for = [&](int step) { return rows[step - 2]["plan"].get<std::string>(); };
    // Step 6 is the first slow one (steps count from 1 in the metrics); step 7 already skips,
    // unless step 7 is a probe (should the machine's noise have started resizing earlier).
    CHECK((skipped(7, 1) > 0 || plan_for(7) == "probe"));
    // Every 10th resized step runs every unit to measure the rank afresh.
    bool probed = false;
    for (const auto& row : rows) probed = probed || row["plan"] == "probe";
    CHECK(probed);
  }
}

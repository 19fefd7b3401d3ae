// scripts/gpu_check.sh, the one run a lent GPU machine gets, checked where there is no GPU: it
// must stop at once with a clear reason and still return its two files (a lent machine gives
// back only a few), and a step that does not fit the time budget is reported as skipped.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;

namespace {
// The check with an nvidia-smi of our making first on PATH, so that a machine with a real GPU
// runs this test the same way.
test::Run gpu_check(const test::TempDir& dir, const std::string& nvidia_smi, const std::string& args,
                    const std::string& env = "") {
  std::filesystem::create_directories(dir.path / "bin");
  std::string smi = dir.write("bin/nvidia-smi", "#!/bin/sh\n" + nvidia_smi + "\n");
  std::filesystem::permissions(smi, std::filesystem::perms::owner_all);
  return test::run_command("cd " + dir.path.string() + " && PATH=" + dir.file("bin") + ":$PATH OUT=" +
                           dir.file("out") + " " + env + " bash " FLEXTP_SOURCE_DIR "/scripts/gpu_check.sh " + args);
}

std::vector<std::string> files_in(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(folder)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace

TEST_CASE("without a GPU, gpu_check.sh --quick stops at once, says why, and returns its two files") {
  test::TempDir dir("gpu-check");
  test::Run r = gpu_check(dir, "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'; exit 9",
                          "--quick");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(r.output.find("no GPU visible") != std::string::npos);
  CHECK(r.output.find("could not communicate with the NVIDIA driver") != std::string::npos);
  CHECK(r.output.find("SKIPPED: every GPU step") != std::string::npos);
  CHECK(r.output.find("passed") == std::string::npos);
  REQUIRE(files_in(dir.file("out")) == std::vector<std::string>{"logs.tar.gz", "summary.txt"});
  CHECK(test::read_bytes(dir.file("out/summary.txt")).find("no GPU visible") != std::string::npos);
  test::Run listing = test::run_command("tar -tzf " + dir.file("out/logs.tar.gz"));
  CHECK(listing.status == 0);
  CHECK(listing.output.find("logs/gpu.txt") != std::string::npos);
}

TEST_CASE("gpu_check.sh reports a step that its time budget cannot hold as skipped, and packs its logs") {
  test::TempDir dir("gpu-check-budget");
  // A GPU as nvidia-smi reports one, and no time left: no build is carried here, so the first
  // step is the configure step, which must be skipped, not started.
  test::Run r = gpu_check(dir, "echo 'GPU 0: NVIDIA H200 (UUID: GPU-0)'", "--quick",
                          "FLEXTP_GPU_BUILD=" + dir.file("build") + " FLEXTP_GPU_BUNDLE=" + dir.file("no-bundle") + " FLEXTP_GPU_BUDGET=0");
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("configure: SKIPPED, the 0s budget is spent") != std::string::npos);
  CHECK(r.output.find("the build failed") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("build")));
  CHECK(files_in(dir.file("out")) == std::vector<std::string>{"logs.tar.gz", "summary.txt"});
}

TEST_CASE("gpu_check.sh refuses an argument it does not know") {
  test::TempDir dir("gpu-check-args");
  test::Run r = gpu_check(dir, "exit 9", "--quik");
  CHECK(r.status == 2);
  CHECK(r.output.find("unknown argument '--quik'") != std::string::npos);
}

namespace {
// A bundle of stand-ins for the GPU build's programs (scripts that print what the real ones
// would) and an mpirun stand-in, so that the check's steps run here without a GPU.
void fake_bundle(const test::TempDir& dir, const std::string& gpu_tests_output, bool mpirun_works) {
  auto script = [&](const std::string& name, const std::string& body) {
    std::string path = dir.write(name, "#!/bin/sh\n" + body + "\n");
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  };
  std::filesystem::create_directories(dir.path / "bundle");
  std::filesystem::create_directories(dir.path / "bin");
  script("bundle/train", "echo 'step     1 | loss 3.0 | 100 tok/s'");
  script("bundle/flextp_tests",
         "case \"$*\" in *'on the GPU'*) printf '%s\\n' \"" + gpu_tests_output + "\" ;; esac\n"
         "echo '[doctest] test cases: 3 | 3 passed | 0 failed'");
  script("bundle/flextp_mpi_tests", "echo '[doctest] test cases: 1 | 1 passed | 0 failed'");
  script("bundle/bench_train_throughput", "echo 'gpt2-124m | 1000 tok/s'");
  dir.write("bundle/commit", "unknown\n");
  // mpirun drops its own options and runs the program; one that does not start fails --version.
  script("bin/mpirun", mpirun_works ? "while [ $# -gt 0 ]; do case \"$1\" in --version) echo 'mpirun (Open MPI) 4.1.4'; exit 0 ;;\n"
                                      "  -np|-x|--bind-to) shift 2 ;; --mca) shift 3 ;; --*) shift ;; *) exec \"$@\" ;; esac; done"
                                    : "echo 'mpirun: error while loading shared libraries' >&2; exit 127");
}
}  // namespace

TEST_CASE("gpu_check.sh reports a step whose GPU cases skipped as SKIPPED, never as passed, and the check fails") {
  test::TempDir dir("gpu-check-skips");
  fake_bundle(dir, "GPU cases skipped (no mpirun here): the GPU cases of several ranks", true);
  test::Run r = gpu_check(dir, "echo 'GPU 0: NVIDIA H200 (UUID: GPU-0)'", "--quick",
                          "FLEXTP_GPU_BUNDLE=" + dir.file("bundle"));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("tests-ops: passed") != std::string::npos);
  CHECK(r.output.find("tests-gpu: SKIPPED, the log says: GPU cases skipped (no mpirun here)") != std::string::npos);
  CHECK(r.output.find("tests-gpu: passed") == std::string::npos);
  CHECK(r.output.find("nccl-one-rank: passed") != std::string::npos);  // under the mpirun stand-in
  CHECK(r.output.find("SOME STEPS FAILED OR WERE SKIPPED") != std::string::npos);
  CHECK(files_in(dir.file("out")) == std::vector<std::string>{"logs.tar.gz", "summary.txt"});
}

TEST_CASE("gpu_check.sh without a working mpirun reports the multi-rank GPU steps as SKIPPED") {
  test::TempDir dir("gpu-check-no-mpirun");
  fake_bundle(dir, "on the GPU, every case ran", false);
  test::Run r = gpu_check(dir, "echo 'GPU 0: NVIDIA H200 (UUID: GPU-0)'", "--quick",
                          "FLEXTP_GPU_BUNDLE=" + dir.file("bundle"));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("tests-gpu: passed") != std::string::npos);
  CHECK(r.output.find("nccl-one-rank: SKIPPED, no mpirun starts here") != std::string::npos);
  CHECK(r.output.find("every step passed") == std::string::npos);
}

TEST_CASE("a GPU bundle runs from a clean environment with the installed MPI hidden: libraries, train, two ranks, gpu_check") {
  if (test::run_command("command -v ompi_info").status != 0) {
    MESSAGE("no OpenMPI here to pack: the bundle's MPI runtime is not checked");
    return;
  }
  test::TempDir dir("bundle-mpi");
  // A bundle of this build's train and tests, the libraries they need that a GPU machine lacks,
  // and the MPI runtime, packed as scripts/gpu_bundle.sh packs them.
  const std::string build = std::filesystem::path(test::train_binary()).parent_path().string();
  test::Run pack = test::run_command(
      "set -e; . " FLEXTP_SOURCE_DIR "/scripts/bundle_libs.sh; b=" + dir.file("bundle") + "; mkdir -p $b " +
      dir.file("rt") + "; cp " + build + "/train " + build + "/flextp_tests $b/; gather_libs $b/runtime-libs $b/train "
      "$b/flextp_tests; " FLEXTP_SOURCE_DIR "/scripts/mpi_runtime.sh " + dir.file("rt/mpi") + "; tar -czf $b/mpi-runtime.tar.gz -C " +
      dir.file("rt") + " mpi");
  INFO(pack.output);
  REQUIRE(pack.status == 0);
  test::Run r = test::run_command("LSAN_OPTIONS=detect_leaks=0 bash " FLEXTP_SOURCE_DIR "/scripts/check_bundle.sh " +
                                  dir.file("bundle"));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("1. the ") != std::string::npos);  // every library from the bundle or the GPU machine's
  CHECK(r.output.find("2. train --help starts") != std::string::npos);
  CHECK(r.output.find("/mpi/bin/mpirun") != std::string::npos);  // the bundle's, not /usr/bin's
  CHECK(r.output.find("step     2 | loss") != std::string::npos);
  CHECK(r.output.find("3. the bundle's MPI ran two ranks") != std::string::npos);
  if (test::run_command("nvidia-smi -L 2>/dev/null | grep -q '^GPU '").status != 0)
    CHECK(r.output.find("4. gpu_check.sh --quick took the bundle's programs and mpirun") != std::string::npos);
  CHECK(r.output.find("FAILED") == std::string::npos);
}

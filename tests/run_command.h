#pragma once
// For the end-to-end tests: runs a shell command and returns its exit status (-1 when killed by a
// signal) and everything it printed on stdout and stderr; a small corpus and model to train.
#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <csignal>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/temp_dir.h"

namespace flextp::test {

struct Run {
  int status;
  std::string output;
};

inline Run run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-2, "popen failed: " + command};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Runs `command` with no file larger than `bytes` (RLIMIT_FSIZE), so that a write beyond it fails
// as on a full disk: with EFBIG where SIGXFSZ is ignored (`ignore_sigxfsz`, or train's own
// handling), else the signal kills the writer. Its output goes to `log` (small).
inline Run run_with_file_limit(const std::string& command, rlim_t bytes, const std::string& log, bool ignore_sigxfsz) {
  std::string shell = command + " > " + log + " 2>&1";
  pid_t pid = ::fork();
  if (pid == 0) {
    struct rlimit limit = {bytes, bytes};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    ::signal(SIGXFSZ, ignore_sigxfsz ? SIG_IGN : SIG_DFL);
    ::execl("/bin/sh", "sh", "-c", shell.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_bytes(log)};
}

// The train binary and mpirun of this build; the environment may name others (scripts/gpu_check.sh
// runs a build made on another machine, where the build's own paths do not exist).
inline std::string train_binary() {
  const char* env = std::getenv("FLEXTP_TRAIN_BINARY");
  return env && *env ? env : FLEXTP_TRAIN_BINARY;
}
inline std::string mpirun() {
  const char* env = std::getenv("FLEXTP_MPIRUN");
  return env && *env ? env : FLEXTP_MPIRUN;
}

// The train binary with these arguments, alone.
inline Run run_train(const std::string& args) { return run_command(train_binary() + " " + args); }

// `train` on `ranks` processes in tensor-parallel groups of `tp` (one process without mpirun),
// given at most 300 s.
inline Run run_train_on(int ranks, int tp, const std::string& args) {
  std::string launcher = ranks == 1 ? "" : mpirun() + " -np " + std::to_string(ranks) + " -x OMP_NUM_THREADS=1 ";
  std::string grid = ranks == 1 ? "" : " --tp " + std::to_string(tp);
  return run_command("timeout 300 " + launcher + train_binary() + " " + args + grid);
}

// The lines of a train --metrics file.
inline std::vector<nlohmann::json> read_metrics(const std::string& path) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// A small training text in the test's directory.
inline std::string corpus(const TempDir& dir) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += "the quick brown fox " + std::to_string(i % 17) + " jumps. ";
  return dir.write("corpus.txt", text);
}

// A model small enough for end-to-end runs of a few steps.
inline const char* kTiny = "--n-layer 1 --n-head 2 --n-embd 16 --mlp-unit 16 --seq-len 16 --batch 2 --log-every 100 "
                           "--eval-every 0 --eval-batches 2 --warmup 2";

}  // namespace flextp::test

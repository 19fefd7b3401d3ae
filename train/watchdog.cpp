#include "train/watchdog.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <unistd.h>

#include "core/timer.h"
#include "core/error.h"

namespace flextp {

Watchdog::Watchdog(double timeout_s, int rank) : timeout_s_(timeout_s), rank_(rank) {
  last_ms_ = now_ms();
  if (timeout_s_ <= 0) return;
  thread_ = std::thread([this] {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      double idle_s = (now_ms() - last_ms_) / 1000.0;
      if (idle_s > timeout_s_ && !paused_) {
        // The peers are gone or stuck: a collective would wait forever. Nothing can be saved
        // safely from here; the last checkpoint stays as it was.
        std::fprintf(stderr,
                     "train: error (rank %d): no progress for %.0f s in step %lld: another rank has died or "
                     "hangs (--rank-timeout %.0f); giving up\n",
                     rank_, idle_s, (long long)step_.load(), timeout_s_);
        std::fflush(stderr);
        ::_exit(3);
      }
    }
  });
}

Watchdog::~Watchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Watchdog::beat(int64_t step) {
  last_ms_ = now_ms();
  step_ = step;
}

void Watchdog::pause() { paused_ = true; }

void Watchdog::resume() {
  last_ms_ = now_ms();
  paused_ = false;
}

namespace {

bool parse_fault_kill(const std::string& spec, int& rank, long long& step) {
  char tail = 0;
  return std::sscanf(spec.c_str(), "%d:%lld%c", &rank, &step, &tail) == 2 && rank >= 0 && step >= 1;
}

// `flag` names the spec in the message.
void check_fault_spec(const std::string& flag, const std::string& spec, int ranks) {
  int rank = 0;
  long long step = 0;
  FLEXTP_CHECK(parse_fault_kill(spec, rank, step), flag, " '", spec, "' must be RANK:STEP (step from 1)");
  FLEXTP_CHECK(rank < ranks, flag, " names rank ", rank, " but there are only ", ranks);
}

// Sends this process `signal` (SIGKILL, SIGSTOP) when the spec names this rank and step.
void fault_point(const std::string& spec, int rank, int64_t step, int signal) {
  int r = 0;
  long long s = 0;
  if (!spec.empty() && parse_fault_kill(spec, r, s) && r == rank && s == step) ::kill(::getpid(), signal);
}

}  // namespace

FaultHook::FaultHook(std::vector<int64_t> nan_steps, std::string kill, std::string hang, int rank, int ranks)
    : nan_steps_(std::move(nan_steps)), kill_(std::move(kill)), hang_(std::move(hang)), rank_(rank) {
  if (!kill_.empty()) check_fault_spec("--fault-kill", kill_, ranks);
  if (!hang_.empty()) check_fault_spec("--fault-hang", hang_, ranks);
}

double FaultHook::after_forward(int64_t step, double loss) const {
  if (std::find(nan_steps_.begin(), nan_steps_.end(), step) != nan_steps_.end())
    loss = std::numeric_limits<double>::quiet_NaN();
  fault_point(kill_, rank_, step, SIGKILL);
  fault_point(hang_, rank_, step, SIGSTOP);
  return loss;
}

}  // namespace flextp

#include "train/fault_hook.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <limits>
#include <unistd.h>

#include "core/error.h"

namespace flextp {

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

#include "core/injected_faults.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace flextp::injected_fault {

namespace {

const char* variable(const char* name) { return std::getenv(name); }

void kill_at(const char* name, int count) {
  const char* v = variable(name);
  if (v != nullptr && std::atoi(v) == count) ::kill(::getpid(), SIGKILL);  // nothing flushed
}

void sleep_ms(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

void kill_in_write(int write) { kill_at("FLEXTP_FAULT_KILL_IN_WRITE", write); }
void kill_after_write(int write) { kill_at("FLEXTP_FAULT_KILL_AFTER_WRITE", write); }

void slow_save() {
  if (const char* ms = variable("FLEXTP_FAULT_SLOW_SAVE_MS")) sleep_ms(std::atoi(ms));
}

int64_t slow_snapshot_ms(int64_t step) {
  const char* fault = variable("FLEXTP_FAULT_SLOW_SNAPSHOT");
  if (fault == nullptr || std::atoll(fault) != step) return 0;
  const char* ms = std::strchr(fault, ':');
  return ms ? std::atoll(ms + 1) : 0;
}

void signal_at(int rank, int64_t step) {
  const char* spec = variable("FLEXTP_FAULT_SIGNAL");
  int r = -1, sig = 0;
  long long s = -1;
  if (spec && std::sscanf(spec, "%d:%lld:%d", &r, &s, &sig) == 3 && r == rank && s == step) std::raise(sig);
}

}  // namespace flextp::injected_fault

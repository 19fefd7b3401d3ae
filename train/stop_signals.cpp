#include "train/stop_signals.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace flextp {
namespace {

volatile std::sig_atomic_t requested = 0;

const char kFirst[] = ": stopping after this step (and saving, with --save); send it again to stop at once\n";

// Async-signal-safe: a flag and write(2) only.
void on_stop_signal(int signal) {
  if (signal == SIGUSR1) signal = SIGINT;  // passed on by scripts/launch, through mpirun
  if (signal == SIGUSR2) signal = SIGTERM;
  if (requested != 0) {  // the second: at once, as the default action would have
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  requested = signal;
  const char* name = signal == SIGINT ? "\ntrain: SIGINT" : "\ntrain: SIGTERM";
  ssize_t ignored = ::write(STDERR_FILENO, name, std::strlen(name));
  ignored = ::write(STDERR_FILENO, kFirst, sizeof kFirst - 1);
  (void)ignored;
}

}  // namespace

void install_stop_signals() {
  for (int signal : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) {
    struct sigaction old = {};
    if (::sigaction(signal, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction action = {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // a write or a wait under way goes on
    ::sigaction(signal, &action, nullptr);
  }
  std::signal(SIGXFSZ, SIG_IGN);
}

int stop_signal() { return requested; }

const char* signal_name(int signal) { return signal == SIGINT ? "SIGINT" : "SIGTERM"; }


}  // namespace flextp

#pragma once
// Stopping a run by signal without losing it. The first SIGINT or SIGTERM asks the run to stop
// after the current step (the next, if it came after the step's backward): every rank stops at
// the same step (the signal may reach only some of them under mpirun: the request travels in
// the step's existing exchanges, Trainer::step), the checkpoint is saved when --save is given,
// and train exits with 128 + the signal's number. A second signal ends the process at once (the signal's default
// action). SIGUSR1 and SIGUSR2 are SIGINT and SIGTERM passed on by mpirun: scripts/launch and its
// supervisor send those for a SIGINT or SIGTERM of their own, because mpirun passes them on to
// every rank at once, where its own SIGINT or SIGTERM would kill the ranks a second later, before
// a slow step ends and its save is written. SIGXFSZ (a file grown past `ulimit -f`) is ignored: the write then fails with EFBIG and
// the save says so, instead of the process dying without a word.

namespace flextp {

// Installs the handlers. A SIGINT or SIGTERM the process inherited as ignored (nohup, a shell's
// background job) stays ignored.
void install_stop_signals();

// The signal that asked this rank to stop (0: none yet).
int stop_signal();

// "SIGINT" or "SIGTERM" for stop_signal()'s signal (none other asks a run to stop).
const char* signal_name(int signal);

}  // namespace flextp

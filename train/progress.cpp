#include "train/progress.h"

#include "parallel/comm/mpi_communicator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unistd.h>

namespace flextp {

// Under mpirun a rank's output reaches the terminal through the launcher (often over a
// pseudo-terminal even when redirected to a file), so only a process started directly draws
// the live line.
Progress::Progress(bool lead, int64_t total_steps)
    : live_(lead && ::isatty(STDOUT_FILENO) && !launched_by_mpi()), total_(total_steps) {}

void Progress::step(int64_t step, double loss, double ms) {
  if (!live_) return;
  ms_sum_ += ms, ++ms_count_;
  double left_s = (ms_sum_ / static_cast<double>(ms_count_)) * static_cast<double>(total_ - step) / 1000.0;
  long h = static_cast<long>(left_s) / 3600, m = static_cast<long>(left_s) / 60 % 60, sec = static_cast<long>(left_s) % 60;
  char eta[32];
  if (h > 0)
    std::snprintf(eta, sizeof eta, "%ldh%02ldm", h, m);
  else
    std::snprintf(eta, sizeof eta, "%ldm%02lds", m, sec);
  std::printf("\r\033[K  step %lld/%lld (%.0f%%) | loss %.4f | %.0f ms/step | ETA %s", (long long)step, (long long)total_,
              100.0 * static_cast<double>(step) / static_cast<double>(std::max<int64_t>(total_, 1)),
              std::isfinite(loss) ? loss : NAN, ms_sum_ / static_cast<double>(ms_count_), eta);
  std::fflush(stdout);
  shown_ = true;
}

void Progress::clear_line() {
  if (!live_ || !shown_) return;
  std::printf("\r\033[K");
  shown_ = false;
}

}  // namespace flextp

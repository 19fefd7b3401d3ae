#pragma once
// What rank 0 writes while training, all of it read from the StepReports: the console's log
// lines (with the progress of train/progress.h) and the metrics file, one JSON line per step.
// The other ranks write nothing.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "train/options.h"
#include "train/progress.h"
#include "train/trainer.h"

namespace flextp {

// The monitor's table, one line per rank, units by kind:
//   rank 0: compute   219.3 ms  wait    71.3 ms  speed 3.42e+07  units head 8 mlp 32 vocab 2 skipped 0
std::string rank_table(const std::vector<RankRow>& rows);

// The closed loop's line of a step with a trial event: the try with its predicted gain, or its
// verdict (kept, undone, inconclusive) and why.
std::string trial_line(int64_t step, const BalanceStep& b);
// The line of a link event (link_watch.h) on `links`; with every rank on one `host` (not
// empty), the collectives' line: no network link, and most likely CPU contention.
std::string link_line(int64_t step, const BalanceStep::Link& link, const std::string& links, const std::string& host);

class TrainLog {
 public:
  // Opens --metrics for appending; `steps`: the run's last step; `cuda`: the first step says
  // which attention runs.
  TrainLog(bool lead, const OutputOptions& o, int64_t steps, int64_t tokens_per_step, bool cuda);
  template <typename... Args>
  void say(const char* fmt, Args... args) {
    if (lead_) std::printf(fmt, args...);
  }
  // Before this run's first step, which follows step `done`: says what MFU is measured against.
  void start(int64_t done, const MfuBasis& mfu);
  // After the last step (or a stop): the run's wall time, tokens/s and mean MFU.
  void finish();
  // The warning of a skipped step.
  void skipped(const StepReport& r);
  // Every log_every steps, at the run's first and at the last: the step's line and, with several ranks, the
  // monitor's table; a migration's line.
  void step(const StepReport& r);
  void validation(const StepReport& r);
  // Where the ranks run (each rank's host, placed; tp as --tp), for the lines that say a link
  // slowed: the links of rank 0's groups (placement.h), or the one host of every rank.
  void set_links(const std::vector<std::string>& hosts, int tp);
  void metrics(const StepReport& r);

 private:
  bool lead_, cuda_;
  int64_t log_every_;
  int64_t first_ = 1;  // this run's first step, always logged (a resumed run's too)
  Progress progress_;
  std::ofstream metrics_;
  std::string metrics_path_;
  std::string links_ = "group's links";
  std::string host_;  // every rank's host, when they share one
};

}  // namespace flextp

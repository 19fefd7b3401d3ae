#pragma once
// Small host-side tables assembled over ranks: each rank contributes one row of doubles (all rows
// of one width) and every rank gets all rows, in rank order, from one all-gather. Bookkeeping of
// several kinds can thus travel in one collective (train/trainer.cpp packs the monitor's row and the
// gradient norm's squares): under contention each collective waits for the slowest rank's slice.
#include <vector>

#include "parallel/comm/communicator.h"

namespace flextp {

std::vector<std::vector<double>> all_gather_rows(Communicator& comm, const std::vector<double>& mine);

}  // namespace flextp

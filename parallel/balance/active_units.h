#pragma once
// Priority resizing, the mechanism: a rank keeps its units active-first, so that skipping the
// last k units of a group shrinks every GEMM of that group (the layers multiply only the active
// rows; nothing is masked). Skipped units keep their weights and optimizer state untouched (the
// optimizers update active rows only) and come back exactly as they were.
#include <string>
#include <vector>

#include "core/parameter.h"

namespace flextp {

// The parameters of this rank holding units of `group` (same order as `params`).
std::vector<Parameter*> group_parameters(const std::vector<Parameter*>& params, const std::string& group);

// Puts the group's local units in the order `units` (a permutation of the current p->units),
// moving the rows of every parameter and of its optimizer slots. No communication.
void reorder_units(const std::vector<Parameter*>& group, const std::vector<int64_t>& units);

// Makes the first `active` local units of the group the active ones (all: -1).
void set_active_units(const std::vector<Parameter*>& group, int64_t active);

}  // namespace flextp

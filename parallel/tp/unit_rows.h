#pragma once
// Moving units' rows between a parameter's local tensor (its units in local order) and the
// logical tensor (all units in id order). Used by checkpoints, initialisation and migration.
#include <vector>

#include "core/parameter.h"

namespace flextp {

// First row of each of p.units inside p.value.
std::vector<int64_t> local_unit_offsets(const Parameter& p);
// The rows of `units`, taken from a logical tensor laid out like p, stacked in the given order.
Tensor take_unit_rows(const Parameter& p, const Tensor& logical, const std::vector<int64_t>& units);
// Writes local rows (holding `units` in order) into their places in a logical tensor.
void put_unit_rows(const Parameter& p, const Tensor& local, const std::vector<int64_t>& units,
                   Tensor& logical);
// Logical shape of p (its first dimension at logical_rows).
Shape logical_shape(const Parameter& p);

}  // namespace flextp

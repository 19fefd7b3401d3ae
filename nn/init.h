#pragma once
// Initialisation from the full master weight: element (r, c) of a logical parameter is drawn from
// the counter-based generator at index r * cols + c, in a stream named after the parameter. A
// rank draws only the rows of the units it owns and gets exactly what a single process would.
#include <string>
#include <vector>

#include "core/tensor.h"

namespace flextp {

// Rows of the given units (unit u = logical rows [u * unit_rows, ...), the last possibly short),
// stacked in the given order; shape [rows, cols] or [rows] when cols == 0.
Tensor normal_unit_rows(const std::string& name, uint64_t seed, const std::vector<int64_t>& units,
                        int64_t unit_rows, int64_t logical_rows, int64_t cols, double std,
                        DType dtype);

// The rows of `units` that the logical tensor of logical_rows rows has (same order).
int64_t rows_of_units(const std::vector<int64_t>& units, int64_t unit_rows, int64_t logical_rows);

}  // namespace flextp

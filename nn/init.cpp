#include "nn/init.h"

#include <algorithm>

#include "core/ops/shape_ops.h"
#include "core/random.h"

namespace flextp {

int64_t rows_of_units(const std::vector<int64_t>& units, int64_t unit_rows, int64_t logical_rows) {
  int64_t n = 0;
  for (int64_t u : units) n += std::min(unit_rows, logical_rows - u * unit_rows);
  return n;
}

Tensor normal_unit_rows(const std::string& name, uint64_t seed, const std::vector<int64_t>& units,
                        int64_t unit_rows, int64_t logical_rows, int64_t cols, double std,
                        DType dtype) {
  int64_t width = std::max<int64_t>(cols, 1);
  Shape shape = cols ? Shape{rows_of_units(units, unit_rows, logical_rows), cols}
                     : Shape{rows_of_units(units, unit_rows, logical_rows)};
  Tensor out = Tensor::empty(shape, dtype);
  int64_t at = 0;
  uint64_t stream = rng::stream_id(name.c_str());
  for (int64_t u : units) {
    int64_t first = u * unit_rows, rows = std::min(unit_rows, logical_rows - first);
    Tensor block = Tensor::randn(cols ? Shape{rows, cols} : Shape{rows}, seed, stream, 0, std,
                                 dtype, Device::cpu(), static_cast<uint64_t>(first * width));
    slice_rows(out, at, rows).copy_from(block);
    at += rows;
  }
  return out;
}

}  // namespace flextp

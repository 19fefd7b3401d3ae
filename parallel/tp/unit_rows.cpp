#include "parallel/tp/unit_rows.h"

#include "core/ops/shape_ops.h"

namespace flextp {

Shape logical_shape(const Parameter& p) {
  Shape s = p.value.shape();
  if (!p.replicated()) s[0] = p.logical_rows();
  return s;
}

std::vector<int64_t> local_unit_offsets(const Parameter& p) {
  std::vector<int64_t> offsets;
  int64_t at = 0;
  for (int64_t u : p.units) {
    offsets.push_back(at);
    at += p.rows_of_unit(u);
  }
  return offsets;
}

Tensor take_unit_rows(const Parameter& p, const Tensor& logical, const std::vector<int64_t>& units) {
  std::vector<Tensor> parts;
  for (int64_t u : units) parts.push_back(slice_rows(logical.detach(), u * p.unit_rows(), p.rows_of_unit(u)));
  if (parts.empty()) {
    Shape s = logical.shape();
    s[0] = 0;
    return Tensor::empty(s, logical.dtype(), logical.device());
  }
  return concat_rows(parts);
}

void put_unit_rows(const Parameter& p, const Tensor& local, const std::vector<int64_t>& units,
                   Tensor& logical) {
  int64_t at = 0;
  for (int64_t u : units) {
    int64_t rows = p.rows_of_unit(u);
    slice_rows(logical.detach(), u * p.unit_rows(), rows).copy_from(slice_rows(local.detach(), at, rows));
    at += rows;
  }
}

}  // namespace flextp

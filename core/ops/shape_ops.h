#pragma once
// Differentiable reshaping, row slicing and row concatenation. Rows are where tensor-parallel
// units live, so these are how units are taken out of and put into parameters.
#include <vector>

#include "core/tensor.h"

namespace flextp {

// Same data, new shape (one dimension may be -1).
Tensor reshape(const Tensor& x, Shape shape);
// Rows [start, start + len) along dim 0; a view sharing the data.
Tensor slice_rows(const Tensor& x, int64_t start, int64_t len);
// Concatenation along dim 0 (all other dimensions equal).
Tensor concat_rows(const std::vector<Tensor>& parts);

// Packs parts one after another into out (same device, bytes in order): how units are packed for
// a transfer and unpacked into a parameter's new rows. Not recorded by autograd.
namespace cpu {
void pack(const std::vector<Tensor>& parts, Tensor& out);
}
namespace cuda {
void pack(const std::vector<Tensor>& parts, Tensor& out);
}

}  // namespace flextp

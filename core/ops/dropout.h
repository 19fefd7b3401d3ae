#pragma once
// Inverted dropout: each element is kept with probability 1 - p and scaled by 1 / (1 - p).
// The mask comes from the counter-based generator (seed, stream, element index), so the backward
// regenerates it instead of storing it. p = 0 returns x itself.
// `first` is the index of x's first element in a larger tensor that x is a run of rows of: x then
// draws that tensor's masks for those rows (a micro-batch or a replica's share of a batch drops
// what the whole batch would drop there).
#include "core/tensor.h"

namespace flextp {

Tensor dropout(const Tensor& x, double p, uint64_t seed, uint64_t stream, uint64_t first = 0);

namespace cpu {
// Used for both directions: y = mask(x) / (1 - p).
void dropout_apply(const Tensor& x, double p, uint64_t seed, uint64_t stream, uint64_t first, Tensor& y);
}
namespace cuda {
void dropout_apply(const Tensor& x, double p, uint64_t seed, uint64_t stream, uint64_t first, Tensor& y);
}

}  // namespace flextp

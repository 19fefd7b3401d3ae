#pragma once
// Inverted dropout: each element is kept with probability 1 - p and scaled by 1 / (1 - p).
// The mask comes from the counter-based generator (seed, stream, element index), so the backward
// regenerates it instead of storing it. p = 0 returns x itself.
#include "core/tensor.h"

namespace flextp {

Tensor dropout(const Tensor& x, double p, uint64_t seed, uint64_t stream);

namespace cpu {
// Used for both directions: y = mask(x) / (1 - p).
void dropout_apply(const Tensor& x, double p, uint64_t seed, uint64_t stream, Tensor& y);
}
namespace cuda {
void dropout_apply(const Tensor& x, double p, uint64_t seed, uint64_t stream, Tensor& y);
}

}  // namespace flextp

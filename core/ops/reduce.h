#pragma once
// Sum and mean of all elements, to a scalar (shape []).
#include "core/tensor.h"

namespace flextp {

Tensor sum(const Tensor& x);
Tensor mean(const Tensor& x);

namespace cpu {
void sum_all(const Tensor& x, Tensor& out);
}
namespace cuda {
void sum_all(const Tensor& x, Tensor& out);
}

}  // namespace flextp

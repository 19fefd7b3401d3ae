#pragma once
// SiLU (swish): x sigmoid(x) = x / (1 + exp(-x)), the gate of the SwiGLU MLP.
#include "core/tensor.h"

namespace flextp {

Tensor silu(const Tensor& x);

namespace cpu {
void silu_forward(const Tensor& x, Tensor& y);
void silu_backward(const Tensor& x, const Tensor& dy, Tensor& dx);
}  // namespace cpu
namespace cuda {
void silu_forward(const Tensor& x, Tensor& y);
void silu_backward(const Tensor& x, const Tensor& dy, Tensor& dx);
}  // namespace cuda

}  // namespace flextp

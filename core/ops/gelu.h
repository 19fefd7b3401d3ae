#pragma once
// GELU in GPT-2's tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#include "core/tensor.h"

namespace flextp {

Tensor gelu(const Tensor& x);

namespace cpu {
void gelu_forward(const Tensor& x, Tensor& y);
void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx);
}  // namespace cpu
namespace cuda {
void gelu_forward(const Tensor& x, Tensor& y);
void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx);
}  // namespace cuda

}  // namespace flextp

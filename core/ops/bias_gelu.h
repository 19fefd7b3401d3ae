#pragma once
// gelu(x + bias) in one pass, GELU in GPT-2's tanh form: 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))).
// The MLP's first linear layer adds its bias inside the GELU pass, so the sum x + bias is never
// written out (nor kept for the backward: the backward recomputes it). x [..., M], bias [M].
#include "core/tensor.h"

namespace flextp {

Tensor bias_gelu(const Tensor& x, const Tensor& bias);

namespace cpu {
void bias_gelu_forward(const Tensor& x, const Tensor& bias, Tensor& y);
// dx = gelu'(x + bias) * dy; the bias gradient is the column sum of dx (the op does it).
void bias_gelu_backward(const Tensor& x, const Tensor& bias, const Tensor& dy, Tensor& dx);
}  // namespace cpu
namespace cuda {
void bias_gelu_forward(const Tensor& x, const Tensor& bias, Tensor& y);
void bias_gelu_backward(const Tensor& x, const Tensor& bias, const Tensor& dy, Tensor& dx);
}  // namespace cuda

}  // namespace flextp

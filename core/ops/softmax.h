#pragma once
// Softmax over the last dimension.
#include "core/tensor.h"

namespace flextp {

Tensor softmax(const Tensor& x);

namespace cpu {
void softmax_forward(const Tensor& x, Tensor& y);
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx);
}  // namespace cpu
namespace cuda {
void softmax_forward(const Tensor& x, Tensor& y);
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx);
}  // namespace cuda

}  // namespace flextp

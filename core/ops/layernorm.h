#pragma once
// Fused LayerNorm over the last dimension: y = (x - mean) * rstd * weight + bias.
// x [..., C], weight [C], bias [C]. The forward keeps mean and rstd per row for the backward.
#include "core/tensor.h"

namespace flextp {

Tensor layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

namespace cpu {
void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, Tensor& y,
                       Tensor& mean, Tensor& rstd);
// Writes (not adds) dx, dw, db.
void layernorm_backward(const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                        const Tensor& dy, Tensor& dx, Tensor& dw, Tensor& db);
}  // namespace cpu
namespace cuda {
void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, Tensor& y,
                       Tensor& mean, Tensor& rstd);
void layernorm_backward(const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                        const Tensor& dy, Tensor& dx, Tensor& dw, Tensor& db);
}  // namespace cuda

}  // namespace flextp

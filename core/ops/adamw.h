#pragma once
// The fused AdamW update of one parameter (decoupled weight decay), in place:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr * (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + weight_decay * p)
#include "core/tensor.h"

namespace flextp {

struct AdamWStep {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t t;  // 1-based step count for the bias corrections
};

void adamw_update(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, const AdamWStep& s);

namespace cpu {
void adamw_update(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, const AdamWStep& s);
}
namespace cuda {
void adamw_update(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, const AdamWStep& s);
}

}  // namespace flextp

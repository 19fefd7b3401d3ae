#pragma once
// The local passes of a cross-entropy whose vocabulary columns are spread over ranks
// (vocabulary-parallel, Megatron-style). Between them the caller all-reduces the row maxima (max)
// and the row sums (sum); parallel/tp/vocab_parallel.h puts it together as one autograd op.
//   logits       [N, Vl]  this rank's columns
//   local_target [N] i32  the target's column among this rank's, or -1 when it lives elsewhere
#include "core/tensor.h"

namespace flextp {

namespace cpu {
void sharded_ce_row_max(const Tensor& logits, Tensor& row_max);
// sum_exp[i] = sum_j exp(logits[i, j] - row_max[i]); target_logit[i] = logits[i, local_target[i]] or 0.
void sharded_ce_sums(const Tensor& logits, const Tensor& row_max, const Tensor& local_target,
                     Tensor& sum_exp, Tensor& target_logit);
// dlogits[i, j] = row_scale[i] * (exp(logits[i, j] - lse[i]) - [j == local_target[i]]).
void sharded_ce_backward(const Tensor& logits, const Tensor& local_target, const Tensor& lse,
                         const Tensor& row_scale, Tensor& dlogits);
}  // namespace cpu
namespace cuda {
void sharded_ce_row_max(const Tensor& logits, Tensor& row_max);
void sharded_ce_sums(const Tensor& logits, const Tensor& row_max, const Tensor& local_target,
                     Tensor& sum_exp, Tensor& target_logit);
void sharded_ce_backward(const Tensor& logits, const Tensor& local_target, const Tensor& lse,
                         const Tensor& row_scale, Tensor& dlogits);
}  // namespace cuda

}  // namespace flextp

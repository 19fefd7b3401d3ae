#pragma once
// The local passes of a cross-entropy whose vocabulary columns are spread over ranks
// (vocabulary-parallel, Megatron-style). Between them the caller all-reduces the row maxima (max)
// and the row sums (sum); parallel/tp/vocab_parallel.h puts it together as one autograd op.
// Every pass runs on the logits' device: no value goes to the host between them.
//   logits       [N, Vl]  this rank's columns
//   runs         [R, 2] i32  the columns that hold real vocabulary ids, as [begin, end) runs
//                (the model's padded vocabulary rows lie outside them: they take no part in the
//                softmax and get zero gradient); one run [0, Vl) when nothing is padded
//   local_target [N] i32  the target's column among this rank's, or -1 when it lives elsewhere
//   counted      [N]      1 where the row's target counts, 0 where it is ignored
#include "core/tensor.h"

namespace flextp {

namespace cpu {
// row_max[i] = max over the runs of logits[i, j] (-inf over no column).
void sharded_ce_row_max(const Tensor& logits, const Tensor& runs, Tensor& row_max);
// sum_exp[i] = sum over the runs of exp(logits[i, j] - row_max[i]);
// target_logit[i] = logits[i, local_target[i]] or 0.
void sharded_ce_sums(const Tensor& logits, const Tensor& runs, const Tensor& row_max,
                     const Tensor& local_target, Tensor& sum_exp, Tensor& target_logit);
// From the all-reduced row_max, sum_exp and target_logit: lse[i] = row_max[i] + log(sum_exp[i])
// and loss [] = the mean of lse[i] - target_logit[i] over the `count` counted rows (0 when none),
// both summed in f64.
void sharded_ce_loss(const Tensor& row_max, const Tensor& sum_exp, const Tensor& target_logit,
                     const Tensor& counted, int64_t count, Tensor& lse, Tensor& loss);
// dlogits[i, j] = s_i * (exp(logits[i, j] - lse[i]) - [j == local_target[i]]) on the runs, 0
// outside them, with s_i = counted[i] * grad_loss / count (grad_loss [] is read on the device).
void sharded_ce_backward(const Tensor& logits, const Tensor& runs, const Tensor& local_target,
                         const Tensor& lse, const Tensor& counted, const Tensor& grad_loss,
                         int64_t count, Tensor& dlogits);
// When one rank holds every column (no all-reduce between the passes), the forward and most of
// the backward in one pass per row (the row stays in cache): row_max, sum_exp and target_logit as
// the two passes above give them, and probs[i, j] = exp(logits[i, j] - lse[i]) on the runs (lse as
// sharded_ce_loss computes it), 0 outside them. sharded_ce_loss then gives lse and the loss.
void sharded_ce_one_rank_forward(const Tensor& logits, const Tensor& runs, const Tensor& local_target,
                                 Tensor& row_max, Tensor& sum_exp, Tensor& target_logit, Tensor& probs);
// sharded_ce_backward's dlogits from those probs (bitwise the same): s_i * probs[i, j] on the runs,
// minus s_i at the target. dlogits may be probs itself (the backward then writes over them).
void sharded_ce_backward_from_probs(const Tensor& probs, const Tensor& runs, const Tensor& local_target,
                                    const Tensor& counted, const Tensor& grad_loss, int64_t count, Tensor& dlogits);
}  // namespace cpu
namespace cuda {
void sharded_ce_row_max(const Tensor& logits, const Tensor& runs, Tensor& row_max);
void sharded_ce_sums(const Tensor& logits, const Tensor& runs, const Tensor& row_max,
                     const Tensor& local_target, Tensor& sum_exp, Tensor& target_logit);
void sharded_ce_loss(const Tensor& row_max, const Tensor& sum_exp, const Tensor& target_logit,
                     const Tensor& counted, int64_t count, Tensor& lse, Tensor& loss);
void sharded_ce_backward(const Tensor& logits, const Tensor& runs, const Tensor& local_target,
                         const Tensor& lse, const Tensor& counted, const Tensor& grad_loss,
                         int64_t count, Tensor& dlogits);
void sharded_ce_one_rank_forward(const Tensor& logits, const Tensor& runs, const Tensor& local_target,
                                 Tensor& row_max, Tensor& sum_exp, Tensor& target_logit, Tensor& probs);
void sharded_ce_backward_from_probs(const Tensor& probs, const Tensor& runs, const Tensor& local_target,
                                    const Tensor& counted, const Tensor& grad_loss, int64_t count, Tensor& dlogits);
}  // namespace cuda

}  // namespace flextp

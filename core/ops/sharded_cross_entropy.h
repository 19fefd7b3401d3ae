#pragma once
// The local passes of a cross-entropy whose vocabulary columns are spread over ranks
// (vocabulary-parallel, Megatron-style). Each rank takes its own row maxima and sums of exp
// relative to them; the ranks exchange these statistics once (an all-gather) and each combines
// them in rank order (sharded_ce_combine), so that every rank holds the same global statistics;
// parallel/tp/vocab_parallel.h puts it together as one autograd op.
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
// The global statistics from every rank's local ones: `gathered` [3 P, N] holds rank r's row_max,
// sum_exp and target_logit (each relative to its own max) at rows 3r, 3r + 1, 3r + 2. Combined
// in rank order, in f64: row_max[i] = max_r m_r, sum_exp[i] = sum_r s_r exp(m_r - row_max[i])
// (a rank with no column, m_r = -inf, adds nothing), target_logit[i] = sum_r t_r (one rank owns
// the target, the others send 0). Never exp of a positive number: no overflow however far apart
// the ranks' logits are.
void sharded_ce_combine(const Tensor& gathered, Tensor& row_max, Tensor& sum_exp, Tensor& target_logit);
// From the global row_max, sum_exp and target_logit: lse[i] = row_max[i] + log(sum_exp[i])
// and loss [] = the mean of lse[i] - target_logit[i] over the `count` counted rows (0 when none),
// both summed in f64.
void sharded_ce_loss(const Tensor& row_max, const Tensor& sum_exp, const Tensor& target_logit,
                     const Tensor& counted, int64_t count, Tensor& lse, Tensor& loss);
// dlogits[i, j] = s_i * (exp(logits[i, j] - lse[i]) - [j == local_target[i]]) on the runs, 0
// outside them, with s_i = counted[i] * grad_loss / count (grad_loss [] is read on the device).
void sharded_ce_backward(const Tensor& logits, const Tensor& runs, const Tensor& local_target,
                         const Tensor& lse, const Tensor& counted, const Tensor& grad_loss,
                         int64_t count, Tensor& dlogits);
}  // namespace cpu
namespace cuda {
void sharded_ce_row_max(const Tensor& logits, const Tensor& runs, Tensor& row_max);
void sharded_ce_sums(const Tensor& logits, const Tensor& runs, const Tensor& row_max,
                     const Tensor& local_target, Tensor& sum_exp, Tensor& target_logit);
void sharded_ce_combine(const Tensor& gathered, Tensor& row_max, Tensor& sum_exp, Tensor& target_logit);
void sharded_ce_loss(const Tensor& row_max, const Tensor& sum_exp, const Tensor& target_logit,
                     const Tensor& counted, int64_t count, Tensor& lse, Tensor& loss);
void sharded_ce_backward(const Tensor& logits, const Tensor& runs, const Tensor& local_target,
                         const Tensor& lse, const Tensor& counted, const Tensor& grad_loss,
                         int64_t count, Tensor& dlogits);
}  // namespace cuda

}  // namespace flextp

#pragma once
// Fused cross-entropy from logits: mean over counted rows of (logsumexp(logits[i]) -
// logits[i, target[i]]). logits [N, V], targets i32 [N]. Rows whose target equals ignore_index
// are not counted; if none is counted the loss is 0. Other targets must lie in [0, V).
#include "core/tensor.h"

namespace flextp {

constexpr int32_t kNoIgnore = -100;

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int32_t ignore_index = kNoIgnore);

namespace cpu {
// loss: the mean over the `counted` rows whose target is not ignore_index (0 if none); lse [N]
// kept for the backward. The op has checked the targets.
void cross_entropy_forward(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                           int64_t counted, Tensor& loss, Tensor& lse);
// dlogits = scale * (softmax(logits) - onehot(target)) on counted rows, 0 on ignored rows.
void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                            int32_t ignore_index, double scale, Tensor& dlogits);
}  // namespace cpu
namespace cuda {
void cross_entropy_forward(const Tensor& logits, const Tensor& targets, int32_t ignore_index,
                           int64_t counted, Tensor& loss, Tensor& lse);
void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                            int32_t ignore_index, double scale, Tensor& dlogits);
}  // namespace cuda

}  // namespace flextp

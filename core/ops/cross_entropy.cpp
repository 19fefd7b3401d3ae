#include "core/ops/cross_entropy.h"

#include "core/autograd.h"
#include "core/dispatch.h"

namespace flextp {

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int32_t ignore_index) {
  FLEXTP_CHECK(logits.ndim() == 2, "cross_entropy: logits must be [N, V], got ", logits.str());
  FLEXTP_CHECK(targets.dtype() == DType::I32 && targets.shape() == Shape{logits.size(0)},
               "cross_entropy: targets must be i32 [", logits.size(0), "], got ", targets.str());
  detail::check_same_device("cross_entropy", logits, targets);
  std::vector<int32_t> copy;
  const int32_t* t = detail::host_ints(targets, copy);
  int64_t counted = 0, vocab = logits.size(1);
  for (int64_t i = 0; i < targets.numel(); ++i) {
    FLEXTP_CHECK(t[i] == ignore_index || (t[i] >= 0 && t[i] < vocab), "cross_entropy: target ", t[i],
                 " of row ", i, " is outside the ", vocab, " classes");
    counted += t[i] != ignore_index;
  }
  Tensor loss = Tensor::empty({}, logits.dtype(), logits.device());
  Tensor lse = Tensor::empty({logits.size(0)}, logits.dtype(), logits.device());
  FLEXTP_DISPATCH(logits.device(), cross_entropy_forward, logits, targets, ignore_index, counted, loss, lse);
  Tensor ld = logits.detach(), td = targets.detach();
  record("cross_entropy", loss, {logits, targets},
         [ld, td, lse, ignore_index, counted](const Tensor& g, const std::vector<bool>&) {
           Tensor dlogits = Tensor::empty(ld.shape(), ld.dtype(), ld.device());
           double scale = counted ? g.item() / static_cast<double>(counted) : 0.0;
           FLEXTP_DISPATCH(ld.device(), cross_entropy_backward, ld, td, lse, ignore_index, scale,
                           dlogits);
           return std::vector<Tensor>{dlogits, Tensor()};
         });
  return loss;
}

}  // namespace flextp

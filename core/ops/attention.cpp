#include "core/ops/attention.h"

#include "core/autograd.h"
#include "core/dispatch.h"

namespace flextp {

Tensor attention(const Tensor& qkv, int64_t n_head, const Numerics& numerics) {
  FLEXTP_CHECK(qkv.ndim() == 3, "attention: qkv must be [B, T, H*3*D], got ", qkv.str());
  FLEXTP_CHECK(n_head >= 0, "attention: negative head count ", n_head);
  int64_t b = qkv.size(0), t = qkv.size(1), w = qkv.size(2);
  FLEXTP_CHECK((n_head == 0 && w == 0) || (n_head > 0 && w % (3 * n_head) == 0),
               "attention: qkv width ", w, " is not 3 * D for each of ", n_head, " heads");
  int64_t d = n_head ? w / (3 * n_head) : 0;
  Tensor out = Tensor::empty({b, t, n_head * d}, qkv.dtype(), qkv.device());
  Tensor lse = Tensor::empty({b, n_head, t}, qkv.dtype(), qkv.device());
  FLEXTP_DISPATCH(qkv.device(), attention_forward, qkv, n_head, out, lse, numerics);
  Tensor qd = qkv.detach(), od = out.detach();
  record("attention", out, {qkv},
         [qd, od, lse, n_head, numerics](const Tensor& g, const std::vector<bool>&) {
           Tensor dqkv = Tensor::empty(qd.shape(), qd.dtype(), qd.device());
           FLEXTP_DISPATCH(qd.device(), attention_backward, qd, od, lse, g, n_head, dqkv, numerics);
           return std::vector<Tensor>{dqkv};
         });
  return out;
}

}  // namespace flextp

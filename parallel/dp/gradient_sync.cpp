#include "parallel/dp/gradient_sync.h"

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/shape_ops.h"

namespace flextp {

GradientSync::GradientSync(Communicator& dp, int64_t bucket_bytes,
                           std::function<void(const std::function<void()>&)> timed)
    : dp_(dp), bucket_bytes_(bucket_bytes), timed_(std::move(timed)) {
  FLEXTP_CHECK(bucket_bytes > 0, "gradient buckets of ", bucket_bytes, " bytes: they must be positive");
}

void GradientSync::all_reduce(Tensor& t) {
  if (timed_)
    timed_([&] { dp_.all_reduce(t, ReduceOp::Sum); });
  else
    dp_.all_reduce(t, ReduceOp::Sum);
}

void GradientSync::sum(const std::vector<Parameter*>& params) {
  stats_ = {};
  if (dp_.size() == 1) return;
  NoGradGuard ng;
  // Which gradients exist on some replica: those take part (zeros where absent), the rest stay absent.
  Tensor present = Tensor::zeros({static_cast<int64_t>(params.size())}, DType::I32);
  for (size_t i = 0; i < params.size(); ++i) present.data<int32_t>()[i] = params[i]->grad().defined() ? 1 : 0;
  all_reduce(present);
  std::vector<Tensor> grads;
  for (size_t i = 0; i < params.size(); ++i) {
    Parameter& p = *params[i];
    if (present.data<int32_t>()[i] == 0 || p.value.numel() == 0) continue;
    if (!p.grad().defined())
      p.value.set_grad(Tensor::zeros(p.value.shape(), p.value.dtype(), p.value.device()));
    grads.push_back(p.grad());
  }
  // Buckets: consecutive gradients of one dtype and device, up to bucket_bytes_ (a larger gradient alone).
  for (size_t first = 0; first < grads.size();) {
    size_t end = first + 1;
    int64_t bytes = static_cast<int64_t>(grads[first].nbytes());
    while (end < grads.size() && grads[end].dtype() == grads[first].dtype() &&
           grads[end].device() == grads[first].device() &&
           bytes + static_cast<int64_t>(grads[end].nbytes()) <= bucket_bytes_)
      bytes += static_cast<int64_t>(grads[end++].nbytes());
    std::vector<Tensor> flat;
    for (size_t i = first; i < end; ++i) flat.push_back(reshape(grads[i], {grads[i].numel()}));
    Tensor bucket = end - first == 1 ? flat[0].clone() : concat_rows(flat);
    all_reduce(bucket);
    int64_t at = 0;
    for (size_t i = first; i < end; ++i) {
      int64_t n = grads[i].numel();
      grads[i].copy_from(reshape(slice_rows(bucket, at, n), grads[i].shape()));
      at += n;
    }
    ++stats_.buckets, stats_.bytes += bytes;
    first = end;
  }
}

}  // namespace flextp

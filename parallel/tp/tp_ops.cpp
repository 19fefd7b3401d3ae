#include "parallel/tp/tp_ops.h"

#include "core/autograd.h"

namespace flextp {
namespace {
bool single(Communicator* comm) { return comm == nullptr || comm->size() == 1; }
}  // namespace

Tensor copy_to_tensor_parallel(const Tensor& x, Communicator* comm, Overlap overlap) {
  if (single(comm)) return x;
  Tensor out = x.detach();  // same values, its own autograd identity
  record("copy_to_tensor_parallel", out, {x}, [comm, overlap](const Tensor& g, const std::vector<bool>&) {
    Tensor sum = g.clone();
    if (overlap == Overlap::Blocking) {
      comm->all_reduce(sum);
    } else {
      std::shared_ptr<PendingReduce> p = comm->start_all_reduce(sum);
      defer_gradients([p] { return p->test(); }, [p] { p->wait(); });
    }
    return std::vector<Tensor>{sum};
  });
  return out;
}

Tensor reduce_from_tensor_parallel(const Tensor& x, Communicator* comm) {
  if (single(comm)) return x;
  Tensor out = x.clone();
  comm->all_reduce(out);
  record("reduce_from_tensor_parallel", out, {x},
         [](const Tensor& g, const std::vector<bool>&) { return std::vector<Tensor>{g}; });
  return out;
}

StartedReduce::StartedReduce(const Tensor& x, Communicator* comm) {
  if (single(comm)) {
    out_ = x;
    return;
  }
  out_ = x.clone();
  pending_ = comm->start_all_reduce(out_);
  // The backward (identity) reads no values: the node may be recorded before the sum arrives.
  record("reduce_from_tensor_parallel", out_, {x},
         [](const Tensor& g, const std::vector<bool>&) { return std::vector<Tensor>{g}; });
}

const Tensor& StartedReduce::finish() {
  if (pending_) pending_->wait(), pending_.reset();
  return out_;
}

void StartedReduce::poll() {
  if (pending_) pending_->test();
}

}  // namespace flextp

#include "parallel/tp/tp_ops.h"

#include "core/autograd.h"

namespace flextp {
namespace {
bool single(Communicator* comm) { return comm == nullptr || comm->size() == 1; }
}  // namespace

Tensor copy_to_tensor_parallel(const Tensor& x, Communicator* comm) {
  if (single(comm)) return x;
  Tensor out = x.detach();  // same values, its own autograd identity
  record("copy_to_tensor_parallel", out, {x}, [comm](const Tensor& g, const std::vector<bool>&) {
    Tensor sum = g.clone();
    comm->all_reduce(sum);
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

}  // namespace flextp

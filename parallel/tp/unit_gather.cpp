#include "parallel/tp/unit_gather.h"

namespace flextp {

Tensor gather_logical(const Parameter& p, const Tensor& local, Communicator* comm) {
  Tensor host = local.to(Device::cpu());
  if (p.replicated()) return host.clone();
  Tensor logical = Tensor::zeros(logical_shape(p), local.dtype());
  put_unit_rows(p, host, p.units, logical);
  if (comm && comm->size() > 1) comm->all_reduce(logical);  // each row is non-zero on one rank
  return logical;
}

Tensor local_rows(const Parameter& p, const Tensor& logical) {
  if (p.replicated()) return logical.clone();
  return take_unit_rows(p, logical, p.units);
}

}  // namespace flextp

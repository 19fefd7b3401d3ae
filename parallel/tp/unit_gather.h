#pragma once
// Whole logical tensors from the units spread over the ranks, and back.
#include "core/parameter.h"
#include "parallel/comm/communicator.h"
#include "parallel/tp/unit_rows.h"

namespace flextp {

// The logical tensor (all units in id order) of `local`, a tensor laid out like p.value
// (p.value itself, or one of its optimizer slots). Every rank takes part; every rank gets it.
Tensor gather_logical(const Parameter& p, const Tensor& local, Communicator* comm);
// This rank's rows of a logical tensor (its units in local order); replicated: the whole tensor.
Tensor local_rows(const Parameter& p, const Tensor& logical);

}  // namespace flextp

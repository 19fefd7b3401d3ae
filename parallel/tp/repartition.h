#pragma once
// Moving units between ranks at a step boundary, with their weights and state slots.
// Every rank calls with the same two partitions. Each moved unit is packed once, on its owner,
// and sent straight to its new owner; everything one rank sends another travels in one message.
// Afterwards every parameter holds its rank's new units: the ones it kept (in their old order)
// followed by the arrivals (by unit id). Gradients must be empty (call between steps). Nothing
// else changes: the layers read their units from their parameters (Parameter::units) each forward.
#include <string>
#include <vector>

#include "core/parameter.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/cost_model.h"
#include "parallel/tp/partition.h"

namespace flextp {

// Every slot of a parameter travels with its units (Parameter::state). `slots` names those every
// parameter must have ("m", "v"): one missing gets them as zeros first, so that every rank packs
// the same layout.
// `method` says how the packed messages travel: grouped point-to-point, or one all-to-all-v.
// Returns the bytes all ranks sent together: the moved units' weights and slots, each once.
int64_t repartition(const std::vector<Parameter*>& params, const Partition& from, const Partition& to,
                    const std::vector<std::string>& slots, Communicator* comm,
                    TransferMethod method = TransferMethod::PointToPoint);

}  // namespace flextp

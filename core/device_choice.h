#pragma once
// Which device a process trains on, from --device: cpu, cuda:N, or cuda (under mpirun, each rank
// on a node takes the GPU of its local rank, modulo the GPUs visible). The GPU is made current.
#include <string>

#include "core/dtype.h"

namespace flextp {

Device choose_device(const std::string& spec);

}  // namespace flextp

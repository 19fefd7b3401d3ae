#pragma once
// The world communicator for the multi-rank tests.
#include "parallel/communicator.h"
#include "parallel/mpi_communicator.h"

namespace flextp::test {

inline Communicator& world() {
  static std::unique_ptr<Communicator> comm = make_mpi_communicator();
  return *comm;
}

}  // namespace flextp::test

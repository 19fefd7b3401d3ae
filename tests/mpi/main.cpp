// The multi-rank tests run under mpirun; every rank runs every test case and compares with what a
// single process computes. Collective calls happen in the same order on every rank.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "parallel/mpi_communicator.h"

int main(int argc, char** argv) {
  flextp::MpiRuntime mpi(&argc, &argv);
  doctest::Context context(argc, argv);
  auto comm = flextp::make_mpi_communicator();
  if (comm->rank() != 0) context.setOption("minimal", true);  // failures still print
  int failed = context.run();
  // One verdict for all ranks: a failure anywhere fails everywhere.
  flextp::Tensor f = flextp::Tensor::from_vector<int32_t>({failed ? 1 : 0}, {1});
  comm->all_reduce(f);
  return f.item() != 0 ? 1 : 0;
}

// The multi-rank tests run under mpirun; every rank runs every test case and compares with what a
// single process computes. Collective calls happen in the same order on every rank. A failed
// check aborts every rank (abort_on_failure.cpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "parallel/comm/mpi_communicator.h"
#include "tests/mpi/mpi_context.h"

int main(int argc, char** argv) {
  flextp::MpiRuntime mpi(&argc, &argv);
  flextp::mpi_place_ranks(true);  // as train does: a host's ranks consecutive (across hosts: tests/hosts)
  doctest::Context context(argc, argv);
  context.addFilter("reporters", "console");
  context.addFilter("reporters", "abort-every-rank");
  if (flextp::test::world().rank() != 0) context.setOption("minimal", true);  // failures still print
  return context.run() != 0 ? 1 : 0;
}

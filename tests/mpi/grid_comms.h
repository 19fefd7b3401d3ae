#pragma once
// A data x tensor parallel grid of the test world's ranks, with this rank's two communicators.
#include <doctest/doctest.h>

#include <memory>

#include "parallel/comm/mpi_communicator.h"
#include "parallel/dp/grid.h"
#include "tests/mpi/mpi_context.h"

namespace flextp::test {

// This rank's place in a grid of `tp` ranks per replica, with its two communicators.
struct GridComms {
  Grid grid;
  std::unique_ptr<Communicator> tp, dp;  // the ranks of its replica; its slot's ranks over replicas
  Communicator* tp_or_null() { return grid.tp == 1 ? nullptr : tp.get(); }
};

inline GridComms grid_of(int tp) {
  Communicator& w = world();
  Grid g = Grid::of(w.size(), w.rank(), tp);
  GridComms out{g, make_mpi_communicator(g.dp_rank), nullptr};
  out.dp = make_mpi_communicator(g.tp_rank);
  REQUIRE(out.tp->size() == g.tp);
  REQUIRE(out.tp->rank() == g.tp_rank);
  REQUIRE(out.dp->size() == g.dp);
  REQUIRE(out.dp->rank() == g.dp_rank);
  return out;
}

}  // namespace flextp::test

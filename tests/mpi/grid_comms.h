#pragma once
// For the data x tensor parallel tests: this rank's place in a grid of `tp` ranks per replica of
// the MPI world, with the communicators of its replica and of its slot over the replicas.
#include <doctest/doctest.h>

#include <memory>

#include "nn/gpt.h"
#include "optim/clip.h"
#include "parallel/comm/gather_rows.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/dp/grid.h"
#include "tests/mpi/mpi_context.h"

namespace flextp::test {

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

// The global gradient norm as the trainer takes it: every rank of the tensor-parallel group's
// squares (grad_squares) gathered in one all-gather, their norm_of (tp may be null: one rank).
inline double global_grad_norm(const std::vector<Parameter*>& params, Communicator* tp) {
  GradSquares mine = grad_squares(params);
  if (!tp) return norm_of({mine});
  std::vector<GradSquares> ranks;
  for (const std::vector<double>& row : all_gather_rows(*tp, {mine.split, mine.replicated}))
    ranks.push_back({row[0], row[1]});
  return norm_of(ranks);
}

// What the grids are compared with: one process computing the loss of the whole batch, its
// gradients and their norm.
struct OneProcess {
  GPT model;
  Tensor loss;
  std::vector<Parameter*> params;
  double norm = 0;
  OneProcess(const GPTConfig& c, const Tensor& ids, const Tensor& targets) : model(c) {
    loss = model.loss(ids, targets);
    loss.backward();
    params = model.parameters();
    norm = global_grad_norm(params, nullptr);
  }
};

}  // namespace flextp::test

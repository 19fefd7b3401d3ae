// What the data-parallel replicas' weight check (check_replica_weights, parallel/dp/replica_agreement.h)
// costs on GPT-2 small (124M parameters, AdamW's two slots): every weight and slot hashed, once
// per `check_every` sums and whenever a partition changes. Run under mpirun, one rank per replica:
//   mpirun -np 2 bench_replica_check [repeats]
#include <chrono>
#include <cstdio>
#include <string>

#include "nn/gpt.h"
#include "optim/optimizer.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/dp/grid.h"
#include "parallel/dp/replica_agreement.h"

using namespace flextp;

int main(int argc, char** argv) {
  MpiRuntime mpi(&argc, &argv);
  std::unique_ptr<Communicator> world = make_mpi_communicator();
  const int repeats = argc > 1 ? std::stoi(argv[1]) : 3;
  GPTConfig c;
  c.vocab_size = 50257, c.n_positions = 1024, c.n_layer = 12, c.n_head = 12, c.n_embd = 768, c.mlp_unit = 64;
  GPT model(c);
  std::vector<Parameter*> params = model.parameters();
  for (Parameter* p : params) p->value.set_grad(Tensor::zeros(p->value.shape(), p->value.dtype()));
  AdamW opt({0.9, 0.999, 1e-8, 0.0});
  opt.step(params, 0.0);  // the slots exist, as after any step
  int64_t bytes = 0;
  for (const Parameter* p : params) {
    bytes += static_cast<int64_t>(p->value.nbytes());
    for (const auto& [slot, t] : p->state) bytes += static_cast<int64_t>(t.nbytes());
  }
  Grid grid = Grid::of(world->size(), world->rank(), 1);
  for (int r = 0; r < repeats; ++r) {
    world->barrier();
    auto t0 = std::chrono::steady_clock::now();
    check_replica_weights(*world, grid, params);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (world->rank() == 0)
      std::printf("check_replica_weights: %.1f ms for %.0f MB of weights and slots (%.2f GB/s)\n", ms, bytes / 1e6,
                  bytes / ms / 1e6);
  }
  return 0;
}

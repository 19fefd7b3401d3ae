// A Hugging Face GPT-2 directory imported at any tensor-parallel size and partition is the
// single process's model: the same loss, and an export bitwise the single process's.
#include <doctest/doctest.h>

#include "core/autograd.h"
#include "optim/optimizer.h"
#include "store/checkpoint.h"
#include "store/hf_gpt2.h"
#include "tests/hf_dirs.h"
#include "tests/mpi/mpi_context.h"
#include "tests/mpi/tiny_gpt.h"

using namespace flextp;

TEST_CASE("a transformers-saved GPT-2 imported at TP = n on even and uneven partitions equals the single process") {
  Communicator& world = test::world();
  test::SharedTempDir dir("mpi-hf-import");
  Tensor ids = test::tokens(2, 8, 3), targets = test::tokens(2, 8, 4);
  Tensor expected = Tensor::zeros({1}, DType::F64);
  if (world.rank() == 0) {
    GPT original(test::tiny_config(DType::F32));
    AdamW opt({});  // a few steps, so that biases and layer norms hold values of their own
    for (int s = 0; s < 3; ++s) {
      original.loss(test::tokens(2, 8, 10 + s), test::tokens(2, 8, 20 + s)).backward();
      opt.step(original.parameters(), 1e-2);
      for (Parameter* p : original.parameters()) p->value.zero_grad();
    }
    test::write_transformers_dir(original, dir.file("hf"));
    export_hf(dir.file("single"), original);
    NoGradGuard ng;
    expected = Tensor::from_vector<double>({original.loss(ids, targets).item()}, {1});
  }
  world.broadcast(expected, 0);
  GPTConfig c = read_hf_config(dir.file("hf"));
  // Units of tiny_config's sizes, for test::partitions (train's flags may pick any), another seed.
  c.vocab_unit = 8, c.vocab_pad = 1, c.mlp_unit = 16, c.seed = 7;
  for (const auto& named : test::partitions(c, world.size())) {
    const std::string& name = named.first;  // not a structured binding: INFO captures it (clang 14)
    const Partition& partition = named.second;
    INFO(name, " partition over ", world.size(), " ranks");
    GPT model(c, LocalUnits::of_rank(c, partition, world.rank()), &world);
    import_hf(dir.file("hf"), model);
    {
      NoGradGuard ng;
      CHECK(test::relative(model.loss(ids, targets).item(), expected.item()) < 1e-6);
    }
    std::string out = dir.file("tp_" + name);
    export_hf(out, model, &world);
    world.barrier();
    if (world.rank() == 0)
      CHECK(test::read_bytes(out + "/model.safetensors") == test::read_bytes(dir.file("single/model.safetensors")));
    world.barrier();
  }
}

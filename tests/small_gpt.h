#pragma once
// The small GPT of the checkpoint, import and snapshot tests: every kind of unit, several units
// of each (a vocabulary of 13 in units of 4, padded), a few trained steps away from its start.
#include "nn/gpt.h"
#include "optim/optimizer.h"

namespace flextp::test {

inline GPTConfig small_gpt() {
  GPTConfig c;
  c.vocab_size = 13;
  c.vocab_unit = 4;
  c.n_positions = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  c.mlp_unit = 8;
  return c;
}

inline Tensor small_gpt_ids() { return Tensor::from_vector<int32_t>({1, 5, 12, 0, 3, 3, 7, 9}, {2, 4}); }

inline void train_a_little(GPT& m, Optimizer& opt, int steps) {
  std::vector<Parameter*> params = m.parameters();
  for (int i = 0; i < steps; ++i) {
    m.loss(small_gpt_ids(), small_gpt_ids()).backward();
    opt.step(params, 1e-2);
    for (Parameter* p : params) p->value.zero_grad();
  }
}

}  // namespace flextp::test

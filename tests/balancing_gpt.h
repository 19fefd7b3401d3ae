#pragma once
// The GPT the balancing tests split over two ranks: one layer of 8 heads, 8 MLP blocks and 2
// vocabulary units, so an even split gives each rank 4 + 4 + 1 units.
#include "nn/gpt.h"

namespace flextp::test {

inline GPTConfig balancing_gpt() {
  GPTConfig c;
  c.vocab_size = 16;
  c.vocab_unit = 8;
  c.vocab_pad = 1;  // unpadded: the unit counts above are what these tests price
  c.n_positions = 8;
  c.n_layer = 1;
  c.n_head = 8;
  c.n_embd = 16;
  c.mlp_unit = 8;
  return c;
}

}  // namespace flextp::test

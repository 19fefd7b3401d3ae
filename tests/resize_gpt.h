#pragma once
// The tiny GPT the single-process resizing tests share: 4 heads and 4 MLP units per layer, so that
// skipping some units leaves others active in every group.
#include "nn/config.h"

namespace flextp::test {

inline GPTConfig resize_test_config(DType dtype) {
  GPTConfig c;
  c.vocab_size = 16;
  c.vocab_unit = 8;
  c.vocab_pad = 1;  // unpadded: 2 vocabulary units
  c.n_positions = 8;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 16;
  c.mlp_unit = 16;
  c.dtype = dtype;
  return c;
}

}  // namespace flextp::test

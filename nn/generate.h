#pragma once
// Sampling text from a model: temperature, top-k, seeded.
#include <vector>

#include "nn/gpt.h"

namespace flextp {

struct SampleOptions {
  int64_t tokens = 200;
  double temperature = 1.0;  // 0: greedy
  int64_t top_k = 0;         // 0: the whole vocabulary
  uint64_t seed = 0;
};

// The token drawn from the last position's logits (the real vocabulary's): the argmax at
// temperature 0, else a draw from softmax(logits / temperature) over the top_k likeliest (all
// with top_k 0), `draw` counting the draws of one seed (each its own uniform number).
int32_t sample_token(const std::vector<double>& logits, const SampleOptions& o, uint64_t draw);

// Continues `prompt` (non-empty) by o.tokens tokens; the context is the last n_positions tokens.
std::vector<int32_t> generate(GPT& model, std::vector<int32_t> prompt, const SampleOptions& o);

}  // namespace flextp

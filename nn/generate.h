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

// Continues `prompt` (non-empty) by o.tokens tokens; the context is the last n_positions tokens.
std::vector<int32_t> generate(GPT& model, std::vector<int32_t> prompt, const SampleOptions& o);

}  // namespace flextp

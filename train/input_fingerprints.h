#pragma once
// What every rank must have read alike, compared across ranks before training: node-local
// copies that differ would train apart without a word, or hang in unequal numbers of collectives.
#include <CLI/CLI.hpp>
#include <vector>

#include "data/tokenizer.h"
#include "nn/config.h"
#include "parallel/comm/rank_agreement.h"
#include "store/checkpoint.h"
#include "train/corpus.h"
#include "train/options.h"

namespace flextp {

// The data, the vocabulary, every flag but those naming this rank's files and device (those may
// differ; the files' contents are compared), the model as built (a checkpoint's config, the seed
// it keeps) and the loaded checkpoint's step and identity.
std::vector<Fingerprint> input_fingerprints(const TrainOptions& o, const CLI::App& app, const Tokenizer& tok,
                                            const GPTConfig& c, const Corpus& corpus, const TrainState& loaded);

}  // namespace flextp

#pragma once
// The tokens a run reads: the whole corpus (--data, or the built-in one), its training part and
// its validation part (the last --val-fraction, or --val-data).
#include <cstdint>
#include <vector>

#include "data/tokenizer.h"
#include "train/options.h"

namespace flextp {

struct Corpus {
  std::vector<int32_t> all, train, val;
};

Corpus read_corpus(const DataOptions& o, const Tokenizer& tok);

// Refuses a token outside the model's vocabulary, naming the file that holds it.
void check_corpus_vocab(const Corpus& corpus, int64_t vocab, const DataOptions& o);

// Entropy (nats) of the tokens' unigram distribution: the loss of a model that ignores context.
double unigram_entropy(const std::vector<int32_t>& tokens);

}  // namespace flextp

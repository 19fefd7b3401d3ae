#include "train/corpus.h"

#include <cmath>
#include <map>

#include "data/batches.h"
#include "data/token_files.h"
#include "train/flags.h"

namespace flextp {

namespace {

void check_vocab(const std::vector<int32_t>& tokens, int64_t vocab, const std::string& what) {
  for (int32_t t : tokens)
    FLEXTP_CHECK(t >= 0 && t < vocab, what, " holds token ", t, ", outside the vocabulary of ",
                 vocab, " (set --vocab)");
}

}  // namespace

Corpus read_corpus(const DataOptions& o, const Tokenizer& tok) {
  Corpus c;
  c.all = o.data.empty() ? tok.encode(with_flag("no --data", [] { return default_corpus_text(); })) : load_tokens(o.data, tok);
  if (o.val_data.empty())
    split_tokens(c.all, o.val_fraction, c.train, c.val);
  else
    c.train = c.all, c.val = load_tokens(o.val_data, tok);
  return c;
}

void check_corpus_vocab(const Corpus& corpus, int64_t vocab, const DataOptions& o) {
  check_vocab(corpus.all, vocab, o.data.empty() ? "the default corpus" : o.data);
  check_vocab(corpus.val, vocab, o.val_data.empty() ? "the validation split" : o.val_data);
}

double unigram_entropy(const std::vector<int32_t>& tokens) {
  std::map<int32_t, double> count;
  for (int32_t t : tokens) count[t] += 1;
  double h = 0, n = static_cast<double>(tokens.size());
  for (const auto& [t, c] : count) h -= c / n * std::log(c / n);
  return h;
}

}  // namespace flextp

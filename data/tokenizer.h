#pragma once
// Tokenizers turn text into token ids and back. The byte-level one (vocabulary 256) needs no
// files, so any text trains out of the box; GPT-2's BPE (data/gpt2_tokenizer.h) reads its two.
// --tokenizer and --tokenizer-dir are alike in every program that reads text (train,
// flextp-tokenize, flextp-sample): GPT-2's two files (encoder.json, vocab.bpe) come from
// --tokenizer-dir when it is given, else from the cache directory that
// scripts/get_gpt2_tokenizer.py downloads them to ($XDG_CACHE_HOME/flextp/gpt2, by default
// ~/.cache/flextp/gpt2).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flextp {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual const char* name() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual std::vector<int32_t> encode(const std::string& text) const = 0;
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
};

class ByteTokenizer : public Tokenizer {
 public:
  const char* name() const override { return "byte"; }
  int64_t vocab_size() const override { return 256; }
  std::vector<int32_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
};

// The cache directory (which need not exist).
std::string gpt2_cache_dir();

// Whether dir holds both files.
bool holds_gpt2_files(const std::string& dir);

// The directory GPT-2's files are read from: --tokenizer-dir when it is given (whether or not it
// holds the files: reading them says what is missing); else the cache directory when it holds
// both files; else an error that says where they were looked for and how to get them.
std::string gpt2_dir_from_flags(const std::string& tokenizer_dir);

// --tokenizer KIND: "byte", or "gpt2" read from gpt2_dir_from_flags(tokenizer_dir).
std::unique_ptr<Tokenizer> tokenizer_from_flags(const std::string& kind, const std::string& tokenizer_dir);

}  // namespace flextp

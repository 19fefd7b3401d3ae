#pragma once
// Tokenizers turn text into token ids and back. The byte-level one (vocabulary 256) needs no
// files, so any text trains out of the box; GPT-2's BPE (data/gpt2_tokenizer.h) reads its two.
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

// --tokenizer KIND: "byte", or "gpt2" read from DIR/encoder.json and DIR/vocab.bpe.
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& kind, const std::string& dir);

}  // namespace flextp

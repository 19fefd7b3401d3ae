#pragma once
// GPT-2's byte-level BPE, read from the two files GPT-2 was released with: encoder.json (token
// -> id) and vocab.bpe (the merges in rank order). Text is first cut by GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (matched by hand: no regex engine with Unicode classes is needed), then each piece's bytes are
// merged pairwise, always the adjacent pair whose merged token ranks lowest (leftmost on ties).
// encode() treats "<|endoftext|>" in text as plain text (like tiktoken's encode_ordinary);
// end_of_text() is its id for whoever joins documents.
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/tokenizer.h"

namespace flextp {

class Gpt2Tokenizer : public Tokenizer {
 public:
  // Reads DIR/encoder.json and DIR/vocab.bpe.
  static Gpt2Tokenizer from_dir(const std::string& dir);
  // The two files' contents; `where` names them in errors.
  Gpt2Tokenizer(const std::string& encoder_json, const std::string& vocab_bpe, const std::string& where);

  const char* name() const override { return "gpt2"; }
  int64_t vocab_size() const override { return static_cast<int64_t>(bytes_of_.size()); }
  std::vector<int32_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t end_of_text() const { return end_of_text_; }

  // The pieces GPT-2's pattern cuts `text` into, in order (they concatenate back to `text`).
  static std::vector<std::string_view> pieces(std::string_view text);

 private:
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;
  int32_t rank(std::string_view bytes) const;  // -1 when no token has these bytes

  std::unordered_map<std::string, int32_t> rank_;  // token bytes -> id, specials excluded
  std::vector<std::string> bytes_of_;              // id -> token bytes
  int32_t end_of_text_ = -1;
};

}  // namespace flextp

#pragma once
// --tokenizer and --tokenizer-dir, alike in every program that reads text (train,
// flextp-tokenize, flextp-sample): GPT-2's files come from --tokenizer-dir when it is given, else
// from the cache directory scripts/get_gpt2_tokenizer.py fills (data/gpt2_files.h).
#include <memory>
#include <string>

#include "core/error.h"
#include "data/gpt2_files.h"
#include "data/tokenizer.h"

namespace flextp {

// The directory GPT-2's files are read from, or an error that says where they were looked for
// and how to get them.
inline std::string gpt2_dir_from_flags(const std::string& tokenizer_dir) {
  std::string dir = find_gpt2_dir(tokenizer_dir);
  FLEXTP_CHECK(!dir.empty(), "--tokenizer gpt2: GPT-2's encoder.json and vocab.bpe are not in the cache directory ",
               gpt2_cache_dir(), " and no --tokenizer-dir was given: download them there with "
               "scripts/get_gpt2_tokenizer.py, or name a directory holding them with --tokenizer-dir DIR");
  return dir;
}

inline std::unique_ptr<Tokenizer> tokenizer_from_flags(const std::string& kind, const std::string& tokenizer_dir) {
  if (kind != "gpt2") return make_tokenizer(kind, "");
  std::string dir = gpt2_dir_from_flags(tokenizer_dir);
  try {
    return make_tokenizer(kind, dir);
  } catch (const Error& e) {
    throw Error((tokenizer_dir.empty() ? "--tokenizer gpt2 (from the cache): " : "--tokenizer-dir: ") +
                std::string(e.what()));
  }
}

}  // namespace flextp

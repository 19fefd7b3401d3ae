#pragma once
// Where GPT-2's two tokenizer files (encoder.json, vocab.bpe) are found: in a directory the user
// names, or else in the cache directory that scripts/get_gpt2_tokenizer.py downloads them to
// ($XDG_CACHE_HOME/flextp/gpt2, by default ~/.cache/flextp/gpt2).
#include <string>

namespace flextp {

// The cache directory (which need not exist).
std::string gpt2_cache_dir();

// Whether dir holds both files.
bool holds_gpt2_files(const std::string& dir);

// `named` when it is not empty (whether or not it holds the files: reading them says what is
// missing); else the cache directory when it holds both files; else empty.
std::string find_gpt2_dir(const std::string& named);

}  // namespace flextp

#pragma once
// Where tokens come from: text files (through a tokenizer), llm.c's token shards, and the default
// corpus (the English text of Debian's fortunes packages).
//
// llm.c shard format: a header of 256 little-endian int32 (magic 20240520, version 1, token
// count, the rest 0), then the tokens as little-endian uint16.
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace flextp {

constexpr int32_t kShardMagic = 20240520;
constexpr int32_t kShardVersion = 1;

std::string read_text_file(const std::string& path);
// One shard, or every file matching a glob pattern (sorted by name), concatenated.
std::vector<int32_t> read_shards(const std::string& path_or_glob);
void write_shard(const std::string& path, const std::vector<int32_t>& tokens);

// Throws, naming `path`, the byte and its line, unless `text` is UTF-8 text.
void check_text(const std::string& path, const std::string& text);

// Tokens of a data argument: a shard or shard glob (by its magic), or else a UTF-8 text file
// through the tokenizer; a file that is neither is refused.
std::vector<int32_t> load_tokens(const std::string& path, const Tokenizer& tokenizer);

// The concatenated fortunes files (sorted by name); a clear error naming the package if absent.
std::string default_corpus_text(const std::string& dir = "/usr/share/games/fortunes");

}  // namespace flextp

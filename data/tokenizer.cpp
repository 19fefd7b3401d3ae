#include "data/tokenizer.h"

#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "data/gpt2_tokenizer.h"

namespace flextp {

std::vector<int32_t> ByteTokenizer::encode(const std::string& text) const {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out(ids.size(), '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    FLEXTP_CHECK(ids[i] >= 0 && ids[i] < 256, "byte tokenizer: id ", ids[i], " is not a byte");
    out[i] = static_cast<char>(ids[i]);
  }
  return out;
}

std::string gpt2_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string base = xdg && *xdg ? xdg : std::string(home && *home ? home : ".") + "/.cache";
  return base + "/flextp/gpt2";
}

bool holds_gpt2_files(const std::string& dir) {
  return std::filesystem::is_regular_file(dir + "/encoder.json") && std::filesystem::is_regular_file(dir + "/vocab.bpe");
}

std::string gpt2_dir_from_flags(const std::string& tokenizer_dir) {
  if (!tokenizer_dir.empty()) return tokenizer_dir;
  std::string cache = gpt2_cache_dir();
  FLEXTP_CHECK(holds_gpt2_files(cache),
               "--tokenizer gpt2: GPT-2's encoder.json and vocab.bpe are not in the cache directory ", cache,
               " and no --tokenizer-dir was given: download them there with scripts/get_gpt2_tokenizer.py, or name "
               "a directory holding them with --tokenizer-dir DIR");
  return cache;
}

std::unique_ptr<Tokenizer> tokenizer_from_flags(const std::string& kind, const std::string& tokenizer_dir) {
  if (kind == "byte") return std::make_unique<ByteTokenizer>();
  FLEXTP_CHECK(kind == "gpt2", "tokenizer '", kind, "' is not one of byte, gpt2");
  std::string dir = gpt2_dir_from_flags(tokenizer_dir);
  try {
    return std::make_unique<Gpt2Tokenizer>(Gpt2Tokenizer::from_dir(dir));
  } catch (const Error& e) {
    throw Error((tokenizer_dir.empty() ? "--tokenizer gpt2 (from the cache): " : "--tokenizer-dir: ") +
                std::string(e.what()));
  }
}

}  // namespace flextp

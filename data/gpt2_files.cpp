#include "data/gpt2_files.h"

#include <cstdlib>
#include <filesystem>

namespace flextp {

std::string gpt2_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string base = xdg && *xdg ? xdg : std::string(home && *home ? home : ".") + "/.cache";
  return base + "/flextp/gpt2";
}

bool holds_gpt2_files(const std::string& dir) {
  return std::filesystem::is_regular_file(dir + "/encoder.json") && std::filesystem::is_regular_file(dir + "/vocab.bpe");
}

std::string find_gpt2_dir(const std::string& named) {
  if (!named.empty()) return named;
  std::string cache = gpt2_cache_dir();
  return holds_gpt2_files(cache) ? cache : std::string();
}

}  // namespace flextp

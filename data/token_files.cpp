#include "data/token_files.h"

#include <glob.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/safetensors.h"
#include "data/unicode_classes.h"

namespace flextp {
namespace {

int32_t le32(const unsigned char* p) {
  return static_cast<int32_t>(p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24));
}

std::vector<std::string> glob_paths(const std::string& pattern) {
  glob_t g{};
  int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

void read_one_shard(const std::string& path, std::vector<int32_t>& out) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  FLEXTP_CHECK(in, "cannot open token shard ", path, ": ", std::strerror(errno));
  uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  FLEXTP_CHECK(size >= 1024, path, ": ", size, " bytes is shorter than the 1024-byte shard header");
  unsigned char header[1024];
  in.read(reinterpret_cast<char*>(header), 1024);
  FLEXTP_CHECK(le32(header) == kShardMagic, path, ": bad shard magic ", le32(header),
               " (expected ", kShardMagic, "): not an llm.c token shard");
  FLEXTP_CHECK(le32(header + 4) == kShardVersion, path, ": shard version ", le32(header + 4),
               " is not supported (expected ", kShardVersion, ")");
  int32_t count = le32(header + 8);
  FLEXTP_CHECK(count >= 0 && size == 1024 + 2 * static_cast<uint64_t>(count), path,
               ": header says ", count, " tokens but the file holds ", (size - 1024) / 2.0);
  std::vector<uint16_t> raw(count);
  in.read(reinterpret_cast<char*>(raw.data()), 2 * static_cast<std::streamsize>(count));
  FLEXTP_CHECK(in, path, ": could not read its ", count, " tokens");
  for (uint16_t t : raw) out.push_back(static_cast<int32_t>(t));  // little-endian host
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  // A directory opens as a stream that reads nothing: it would pass for an empty text.
  FLEXTP_CHECK(!std::filesystem::is_directory(path, ec), path, " is a directory, not a data file: give a text file, ",
               "a token shard, or shards by a quoted glob (e.g. '", path, "/train_*.bin')");
  std::ifstream in(path, std::ios::binary);
  FLEXTP_CHECK(in, "cannot open data file ", path, ": ", std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<int32_t> read_shards(const std::string& path_or_glob) {
  std::vector<std::string> paths = glob_paths(path_or_glob);
  FLEXTP_CHECK(!paths.empty(), "no token shard matches ", path_or_glob);
  std::vector<int32_t> out;
  for (const std::string& p : paths) read_one_shard(p, out);
  return out;
}

void write_shard(const std::string& path, const std::vector<int32_t>& tokens) {
  FLEXTP_CHECK(tokens.size() <= 0x7fffffffu, "write_shard: too many tokens for one shard");
  std::string bytes(1024, '\0');
  auto put32 = [&](size_t at, int32_t v) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>((static_cast<uint32_t>(v) >> (8 * i)) & 0xff);
  };
  put32(0, kShardMagic);
  put32(4, kShardVersion);
  put32(8, static_cast<int32_t>(tokens.size()));
  for (int32_t t : tokens) {
    FLEXTP_CHECK(t >= 0 && t < 65536, "write_shard: token ", t, " does not fit in uint16");
    bytes.push_back(static_cast<char>(t & 0xff));
    bytes.push_back(static_cast<char>(t >> 8));
  }
  write_file_atomic(path, bytes);
}

namespace {

bool looks_like_shard(const std::string& path) {  // by the magic number at its start
  std::ifstream in(path, std::ios::binary);
  unsigned char head[4];
  return in.read(reinterpret_cast<char*>(head), 4) && le32(head) == kShardMagic;
}

// The offset of the first byte of `text` that is not UTF-8 text (a NUL, or a byte of no valid
// UTF-8 sequence), or nothing.
std::optional<size_t> first_non_text_byte(const std::string& text) {
  for (size_t at = 0, length = 0; at < text.size(); at += length) {
    char32_t c = next_code_point(text.data(), text.size(), at, length);
    if (c == 0 || c > 0x10FFFF) return at;
  }
  return std::nullopt;
}

}  // namespace

void check_text(const std::string& path, const std::string& text) {
  std::optional<size_t> at = first_non_text_byte(text);
  if (!at) return;
  // A shard whose magic is damaged is binary (NUL bytes in its header), and text in another
  // encoding would be trained on as other tokens: both are refused, saying what the file is not.
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(text[*at]));
  const int64_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(*at), '\n');
  std::string magic = text.size() >= 4 ? std::to_string(le32(reinterpret_cast<const unsigned char*>(text.data())))
                                       : std::string("missing");
  FLEXTP_FAIL(path, ": byte ", hex, " at offset ", *at, " (line ", line, ") is not UTF-8 text, and the file is ",
              "not an llm.c token shard either (its magic is ", magic, ", not ", kShardMagic,
              "): data files are UTF-8 text or token shards; convert text in another encoding to UTF-8 "
              "(e.g. iconv -f latin1 -t utf-8)");
}

std::vector<int32_t> load_tokens(const std::string& path, const Tokenizer& tokenizer) {
  bool pattern = path.find_first_of("*?[") != std::string::npos;
  if (pattern || looks_like_shard(path)) return read_shards(path);
  // Not a shard by its magic: text, if it is text.
  std::string text = read_text_file(path);
  check_text(path, text);
  return tokenizer.encode(text);
}

std::string default_corpus_text(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  FLEXTP_CHECK(fs::is_directory(dir, ec), "the default corpus ", dir,
               " is missing: install Debian's fortunes packages (scripts/deps.sh, or apt-get "
               "install fortunes fortunes-min) or give a data file");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    bool index = name.size() > 4 && (name.substr(name.size() - 4) == ".dat" ||
                                     name.substr(name.size() - 3) == ".u8");
    if (e.is_regular_file() && !e.is_symlink() && !index) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const std::string& f : files) text += read_text_file(f);
  FLEXTP_CHECK(!text.empty(), "the default corpus ", dir, " holds no text");
  return text;
}

}  // namespace flextp

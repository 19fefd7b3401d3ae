// GPT-2's tokenizer files for everyone: scripts/get_gpt2_tokenizer.py puts them, verified by
// sha256, in the cache directory; the programs read them from --tokenizer-dir when it is given,
// else from that cache, else say where they looked and how to get them.
#include <doctest/doctest.h>

#include <filesystem>

#include "core/error.h"
#include "data/tokenizer.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;

namespace {

const std::string kShared = FLEXTP_SOURCE_DIR "/../shared/gpt2";

test::Run get_tokenizer(const std::string& args) {
  return test::run_command("python3 " FLEXTP_SOURCE_DIR "/scripts/get_gpt2_tokenizer.py " + args);
}

void copy_gpt2_files(const std::string& to) {
  std::filesystem::create_directories(to);
  for (const char* name : {"encoder.json", "vocab.bpe"})
    std::filesystem::copy_file(kShared + "/" + name, to + "/" + name);
}

}  // namespace

TEST_CASE("GPT-2's files come from --tokenizer-dir when given, else from the cache, else a message says how to get them") {
  test::TempDir dir("gpt2-files");
  test::ScopedEnv cache_home("XDG_CACHE_HOME", dir.file("cache"));
  const std::string cache = dir.file("cache") + "/flextp/gpt2";
  CHECK(gpt2_cache_dir() == cache);
  {
    test::ScopedEnv no_xdg("XDG_CACHE_HOME", "");
    test::ScopedEnv home("HOME", "/home/someone");
    CHECK(gpt2_cache_dir() == "/home/someone/.cache/flextp/gpt2");
  }
  // Neither: the message names the cache, the flag and the script.
  CHECK_THROWS_WITH_AS(gpt2_dir_from_flags(""), doctest::Contains("--tokenizer gpt2: "), Error);
  CHECK_THROWS_WITH_AS(tokenizer_from_flags("gpt2", ""),
                       doctest::Contains(("are not in the cache directory " + cache +
                                          " and no --tokenizer-dir was given: download them there with "
                                          "scripts/get_gpt2_tokenizer.py")
                                             .c_str()),
                       Error);
  CHECK(tokenizer_from_flags("byte", "")->vocab_size() == 256);  // the byte tokenizer needs no files
  if (!std::filesystem::exists(kShared + "/vocab.bpe")) return;
  // The cache alone.
  copy_gpt2_files(cache);
  CHECK(gpt2_dir_from_flags("") == cache);
  CHECK(tokenizer_from_flags("gpt2", "")->vocab_size() == 50257);
  // --tokenizer-dir wins over the cache, even when it lacks the files.
  CHECK(gpt2_dir_from_flags(kShared) == kShared);
  CHECK_THROWS_WITH_AS(tokenizer_from_flags("gpt2", dir.file("empty")),
                       doctest::Contains(("--tokenizer-dir: tokenizer directory " + dir.file("empty") + " has no encoder.json").c_str()),
                       Error);
  // A broken file in the cache is named as the cache's.
  dir.write("cache/flextp/gpt2/encoder.json", "{not json");
  CHECK_THROWS_WITH_AS(tokenizer_from_flags("gpt2", ""), doctest::Contains("--tokenizer gpt2 (from the cache): "), Error);
}

TEST_CASE("a program finds GPT-2's files in the cache without --tokenizer-dir") {
  if (!std::filesystem::exists(kShared + "/vocab.bpe")) return;
  test::TempDir dir("gpt2-cache-tool");
  copy_gpt2_files(dir.file("cache") + "/flextp/gpt2");
  test::ScopedEnv cache_home("XDG_CACHE_HOME", dir.file("cache"));
  std::string text = dir.write("t.txt", "Hello world, twice: hello world.");
  test::Run r = test::run_command(std::string(FLEXTP_TOKENIZE_BINARY) + " --tokenizer gpt2 --input " + text +
                                  " --val-fraction 0 --out " + dir.file("shards"));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("gpt2: ") != std::string::npos);
}

TEST_CASE("scripts/get_gpt2_tokenizer.py installs the files only when their sha256 is GPT-2's") {
  if (!std::filesystem::exists(kShared + "/vocab.bpe")) return;
  test::TempDir dir("gpt2-get");
  // From a good source (a file:// address stands in for the network) into the default cache.
  test::ScopedEnv cache_home("XDG_CACHE_HOME", dir.file("cache"));
  test::Run r = get_tokenizer("--base-url file://" + kShared);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("sha256 verified") != std::string::npos);
  CHECK(holds_gpt2_files(gpt2_cache_dir()));
  for (const char* name : {"encoder.json", "vocab.bpe"})
    CHECK(test::read_bytes(gpt2_cache_dir() + "/" + name) == test::read_bytes(kShared + "/" + name));
  // Again: nothing to fetch (the source may be gone).
  r = get_tokenizer("--base-url file://" + dir.file("nowhere"));
  CHECK(r.status == 0);
  CHECK(r.output.find("already there") != std::string::npos);
  // A source whose vocab.bpe differs by one byte: refused, and nothing of it is left in place.
  std::string bad = dir.file("bad");
  copy_gpt2_files(bad);
  std::string merges = test::read_bytes(bad + "/vocab.bpe");
  merges[merges.size() / 2] ^= 1;
  dir.write("bad/vocab.bpe", merges);
  r = get_tokenizer("--dir " + dir.file("other") + " --base-url file://" + bad);
  INFO(r.output);
  CHECK(r.status != 0);
  CHECK(r.output.find("not GPT-2's 1ce1664773c50f3e") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.file("other") + "/vocab.bpe"));
  CHECK(std::filesystem::is_directory(dir.file("other")));
  CHECK(std::distance(std::filesystem::directory_iterator(dir.file("other")), {}) == 1);  // encoder.json alone
  // An address that cannot be reached: an error, no file.
  r = get_tokenizer("--dir " + dir.file("third") + " --base-url file://" + dir.file("nowhere"));
  CHECK(r.status != 0);
  CHECK(r.output.find("get_gpt2_tokenizer: error: ") != std::string::npos);
  CHECK(!holds_gpt2_files(dir.file("third")));
}

// flextp-tokenize: text -> train/val shards that hold exactly the tokenizer's ids, which train
// then reads; old shards are never mixed with new ones; bad flags and files are named.
#include <doctest/doctest.h>

#include <filesystem>

#include "data/gpt2_tokenizer.h"
#include "data/token_files.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;

namespace {
test::Run tokenize(const std::string& args) { return test::run_command(std::string(FLEXTP_TOKENIZE_BINARY) + " " + args); }
}  // namespace

TEST_CASE("flextp-tokenize writes shards with the tokenizer's ids, split like train splits text") {
  test::TempDir dir("tokenize");
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "line " + std::to_string(i) + ": some text\n";
  std::string file = dir.write("a.txt", text);
  test::Run r = tokenize("--input " + file + " --out " + dir.file("bytes") + " --val-fraction 0.25 --shard-tokens 10000");
  REQUIRE_MESSAGE(r.status == 0, r.output);
  std::vector<int32_t> train = read_shards(dir.file("bytes") + "/train_*.bin"), val = read_shards(dir.file("bytes") + "/val_*.bin");
  CHECK(std::filesystem::exists(dir.file("bytes") + "/train_000002.bin"));  // 10000 tokens per shard
  std::vector<int32_t> all = train;
  all.insert(all.end(), val.begin(), val.end());
  CHECK(all == ByteTokenizer().encode(text));
  CHECK(val.size() == text.size() - static_cast<size_t>(text.size() * 0.75));
  test::Run t = test::run_train(std::string(test::kTiny) + " --steps 2 --data '" + dir.file("bytes") + "/train_*.bin' --val-data '" +
                                dir.file("bytes") + "/val_*.bin'");
  CHECK_MESSAGE(t.status == 0, t.output);

  std::string gpt2 = FLEXTP_SOURCE_DIR "/../shared/gpt2";
  if (std::filesystem::exists(gpt2 + "/vocab.bpe")) {
    std::string b = dir.write("b.txt", "Second document, it's short.");
    REQUIRE(tokenize("--tokenizer gpt2 --tokenizer-dir " + gpt2 + " --input " + file + " --input " + b + " --val-fraction 0 --out " +
                     dir.file("gpt2")).status == 0);
    Gpt2Tokenizer tok = Gpt2Tokenizer::from_dir(gpt2);
    std::vector<int32_t> want{tok.end_of_text()}, second = tok.encode("Second document, it's short.");
    std::vector<int32_t> first = tok.encode(text);
    want.insert(want.end(), first.begin(), first.end());
    want.push_back(tok.end_of_text());
    want.insert(want.end(), second.begin(), second.end());
    CHECK(read_shards(dir.file("gpt2") + "/train_*.bin") == want);
  }
}

TEST_CASE("flextp-tokenize refuses an --out holding shards, which train_*.bin would read too; --force replaces them") {
  test::TempDir dir("tokenize-again");
  std::string out = dir.file("out");
  std::filesystem::create_directories(out);
  std::string other = dir.write("out/notes.txt", "mine");
  std::string first = dir.write("first.txt", std::string(3000, 'a')), second = dir.write("second.txt", std::string(500, 'b'));
  REQUIRE(tokenize("--input " + first + " --out " + out + " --val-fraction 0.5 --shard-tokens 1000").status == 0);
  REQUIRE(std::filesystem::exists(out + "/train_000001.bin"));
  const std::vector<int32_t> old_train = read_shards(out + "/train_*.bin");

  test::Run again = tokenize("--input " + second + " --out " + out + " --val-fraction 0.5");
  INFO(again.output);
  CHECK(again.status == 1);
  CHECK(again.output.find("flextp-tokenize: error: --out " + out + " already holds shards (train_000000.bin") !=
        std::string::npos);
  CHECK(again.output.find("--force") != std::string::npos);
  CHECK(read_shards(out + "/train_*.bin") == old_train);  // untouched

  test::Run forced = tokenize("--input " + second + " --out " + out + " --val-fraction 0.5 --force");
  INFO(forced.output);
  REQUIRE(forced.status == 0);
  CHECK(forced.output.find("removed 4 old shards") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out + "/train_000001.bin"));
  CHECK(read_shards(out + "/train_*.bin") == std::vector<int32_t>(250, 'b'));
  CHECK(read_shards(out + "/val_*.bin") == std::vector<int32_t>(250, 'b'));
  CHECK(test::read_bytes(other) == "mine");  // files that are not shards stay
}

TEST_CASE("flextp-tokenize names bad flags and files") {
  test::TempDir dir("tokenize-bad");
  auto fails_with = [&](const std::string& args, const std::string& message) {
    test::Run r = tokenize(args);
    INFO(args, "\n", r.output);
    CHECK(r.status != 0);
    CHECK(r.output.find(message) != std::string::npos);
  };
  fails_with("--input " + dir.write("a.txt", "x"), "--out is required");
  fails_with("--input " + dir.file("missing.txt") + " --out " + dir.file("o"), "cannot open data file");
  fails_with("--val-fraction 2 --out " + dir.file("o"), "--val-fraction");
  {
    test::ScopedEnv empty_cache("XDG_CACHE_HOME", dir.file("no-cache"));
    fails_with("--tokenizer gpt2 --out " + dir.file("o"), "no --tokenizer-dir was given");
  }
  fails_with("--tokenizer bpe --out " + dir.file("o"), "--tokenizer");
  fails_with("--shard-tokens 0 --out " + dir.file("o"), "--shard-tokens");
  fails_with("--input " + dir.write("b.txt", "text") + " --out /proc/no/such", "--out /proc/no/such: cannot create directory /proc/no/such: ");
  // A flag CLI11 refuses ends like the errors above: status 1 and the program's prefix.
  for (const char* args : {"--val-fraction 2 --out o", "--no-such-flag --out o", "--input"}) {
    test::Run r = tokenize(args);
    INFO(args, "\n", r.output);
    CHECK(r.status == 1);
    CHECK(r.output.rfind("flextp-tokenize: error: ", 0) == 0);
  }
  CHECK(tokenize("--help").status == 0);
}

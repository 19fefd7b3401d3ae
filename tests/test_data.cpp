// Tokenizer, token files (text, llm.c shards), batches; bad input named clearly.
#include <doctest/doctest.h>

#include <set>

#include "data/batches.h"
#include "data/token_files.h"
#include "tests/temp_dir.h"

using namespace flextp;

TEST_CASE("byte tokenizer round-trips any bytes") {
  ByteTokenizer tok;
  std::string s = std::string("h\xc3\xa9llo\0\xff", 8);
  CHECK(tok.encode(s).size() == 8);
  CHECK(tok.decode(tok.encode(s)) == s);
  CHECK(tok.encode("A")[0] == 65);
  CHECK_THROWS_WITH_AS(tok.decode({300}), doctest::Contains("id 300 is not a byte"), Error);
}

TEST_CASE("llm.c shards: round trip, globs, and damaged shards") {
  test::TempDir dir("shards");
  std::vector<int32_t> a = {1, 2, 65535, 0}, b = {7, 8};
  write_shard(dir.file("s_000.bin"), a);
  write_shard(dir.file("s_001.bin"), b);
  CHECK(read_shards(dir.file("s_000.bin")) == a);
  std::vector<int32_t> both = a;
  both.insert(both.end(), b.begin(), b.end());
  CHECK(read_shards(dir.file("s_*.bin")) == both);
  ByteTokenizer tok;
  CHECK(load_tokens(dir.file("s_001.bin"), tok) == b);  // recognised by its magic

  std::string good = test::read_bytes(dir.file("s_000.bin"));
  std::string bad_magic = good;
  bad_magic[0] = 'x';
  CHECK_THROWS_WITH_AS(read_shards(dir.write("m.bin", bad_magic)), doctest::Contains("bad shard magic"), Error);
  CHECK_THROWS_WITH_AS(read_shards(dir.write("t.bin", good.substr(0, good.size() - 2))),
                       doctest::Contains("header says 4 tokens"), Error);
  CHECK_THROWS_WITH_AS(read_shards(dir.write("h.bin", good.substr(0, 100))),
                       doctest::Contains("shorter than the 1024-byte shard header"), Error);
  std::string bad_version = good;
  bad_version[4] = 9;
  CHECK_THROWS_WITH_AS(read_shards(dir.write("v.bin", bad_version)), doctest::Contains("version 9"), Error);
  CHECK_THROWS_WITH_AS(read_shards(dir.file("nothing_*.bin")), doctest::Contains("no token shard matches"), Error);
  CHECK_THROWS_WITH_AS(write_shard(dir.file("x.bin"), {70000}), doctest::Contains("uint16"), Error);
}

TEST_CASE("text files and the default corpus") {
  test::TempDir dir("text");
  ByteTokenizer tok;
  CHECK(load_tokens(dir.write("a.txt", "abc"), tok) == std::vector<int32_t>{97, 98, 99});
  CHECK_THROWS_WITH_AS(load_tokens(dir.file("missing.txt"), tok),
                       doctest::Contains("cannot open data file"), Error);
  CHECK_THROWS_WITH_AS(default_corpus_text(dir.file("no-fortunes")),
                       doctest::Contains("fortunes"), Error);
  dir.write("one", "first ");
  dir.write("two", "second");
  dir.write("two.dat", "index");
  CHECK(default_corpus_text(dir.path.string()).find("first second") != std::string::npos);
}

TEST_CASE("training batches are deterministic per step and shifted by one") {
  std::vector<int32_t> tokens(1000);
  for (int i = 0; i < 1000; ++i) tokens[i] = i % 251;
  BatchSampler s(&tokens, 4, 16, 7);
  Batch a = s.at_step(3, 0, 4), b = s.at_step(3, 0, 4), c = s.at_step(4, 0, 4);
  CHECK(a.ids.to_vector<int32_t>() == b.ids.to_vector<int32_t>());
  CHECK(a.ids.to_vector<int32_t>() != c.ids.to_vector<int32_t>());
  CHECK(a.ids.shape() == Shape{4, 16});
  std::vector<int32_t> ids = a.ids.to_vector<int32_t>(), tg = a.targets.to_vector<int32_t>();
  for (int i = 0; i < 64; ++i) CHECK(tg[i] == (ids[i] + 1) % 251);
  CHECK(BatchSampler(&tokens, 4, 16, 8).at_step(3, 0, 4).ids.to_vector<int32_t>() != ids);
}

TEST_CASE("a replica's run of a step's windows is those rows of the whole step's batch") {
  std::vector<int32_t> tokens(1000);
  for (int i = 0; i < 1000; ++i) tokens[i] = (i * 7) % 251;
  BatchSampler s(&tokens, 6, 16, 7);
  Batch whole = s.at_step(5, 0, 6);
  std::vector<int32_t> ids = whole.ids.to_vector<int32_t>(), tg = whole.targets.to_vector<int32_t>();
  for (std::pair<int64_t, int64_t> run : {std::pair<int64_t, int64_t>{0, 6}, {0, 2}, {2, 2}, {4, 2}, {3, 3}, {5, 1}}) {
    const int64_t first = run.first, count = run.second;  // INFO captures them: no structured binding
    INFO("windows ", first, " + ", count);
    Batch part = s.at_step(5, first, count);
    CHECK(part.ids.shape() == Shape{count, 16});
    CHECK(part.ids.to_vector<int32_t>() == std::vector<int32_t>(ids.begin() + first * 16, ids.begin() + (first + count) * 16));
    CHECK(part.targets.to_vector<int32_t>() == std::vector<int32_t>(tg.begin() + first * 16, tg.begin() + (first + count) * 16));
  }
  CHECK_THROWS_WITH_AS(s.at_step(5, 4, 3), doctest::Contains("windows [4, 7) of a step of 6"), Error);
}

TEST_CASE("training windows start anywhere in [0, tokens - seq_len) and nowhere else; seq_len + 1 tokens make one window") {
  // Token i is i, so a window's first id is its start. 12 tokens at seq_len 4: starts 0..7 (the
  // window at 7 takes ids 7-10 and targets 8-11, the stream's last token).
  std::vector<int32_t> tokens(12);
  for (int i = 0; i < 12; ++i) tokens[i] = i;
  BatchSampler s(&tokens, 4, 4, 3);
  std::set<int32_t> starts;
  for (int64_t step = 0; step < 50; ++step) {
    Batch b = s.at_step(step, 0, 4);
    std::vector<int32_t> ids = b.ids.to_vector<int32_t>(), tg = b.targets.to_vector<int32_t>();
    for (int w = 0; w < 4; ++w) {
      starts.insert(ids[w * 4]);
      for (int t = 0; t < 4; ++t) {
        CHECK(ids[w * 4 + t] == ids[w * 4] + t);  // whole windows, never wrapped or cut
        CHECK(tg[w * 4 + t] == ids[w * 4 + t] + 1);
      }
    }
  }
  // 200 draws over 8 starts: each is missed with probability (7/8)^200, about 3e-12.
  CHECK(starts == std::set<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  // Exactly seq_len + 1 tokens: the one window, at every step and for every row.
  std::vector<int32_t> five{10, 11, 12, 13, 14};
  BatchSampler one(&five, 3, 4, 3);
  for (int64_t step = 0; step < 5; ++step) {
    Batch b = one.at_step(step, 0, 3);
    CHECK(b.ids.to_vector<int32_t>() == std::vector<int32_t>{10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13});
    CHECK(b.targets.to_vector<int32_t>() == std::vector<int32_t>{11, 12, 13, 14, 11, 12, 13, 14, 11, 12, 13, 14});
  }
}

TEST_CASE("evaluation windows are in order without overlap") {
  std::vector<int32_t> tokens(50);
  for (int i = 0; i < 50; ++i) tokens[i] = i;
  CHECK(eval_windows(tokens, 10) == 4);  // 49 / 10: the last window needs one more target
  Batch b = eval_batch(tokens, 10, 1, 2);
  CHECK(b.ids.to_vector<int32_t>()[0] == 10);
  CHECK(b.targets.to_vector<int32_t>()[19] == 30);
  CHECK_THROWS_WITH_AS(eval_batch(tokens, 10, 3, 2), doctest::Contains("do not fit"), Error);
}

TEST_CASE("data shorter than seq_len + 1 is refused") {
  std::vector<int32_t> tokens(16);
  CHECK_THROWS_WITH_AS(BatchSampler(&tokens, 2, 16, 1),
                       doctest::Contains("16 tokens, fewer than seq_len + 1 = 17"), Error);
  std::vector<int32_t> train, val;
  split_tokens(std::vector<int32_t>(100, 1), 0.1, train, val);
  CHECK(train.size() == 90);
  CHECK(val.size() == 10);
}

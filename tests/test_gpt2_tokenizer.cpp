// GPT-2's BPE: the pre-tokeniser on hand-made cases, exact agreement with tiktoken's ids
// (tests/data/gpt2_golden.json, written by scripts/gpt2_golden.py) on hard strings and the default
// corpus, byte-exact decoding of any bytes, and clear errors for damaged vocabulary files.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/random.h"
#include "data/gpt2_tokenizer.h"
#include "data/token_files.h"
#include "tests/temp_dir.h"

using namespace flextp;

namespace {

// GPT-2's files: FLEXTP_GPT2_DIR, else ../shared/gpt2 beside the checkout.
std::optional<std::string> gpt2_dir() {
  std::vector<std::string> places;
  if (const char* env = std::getenv("FLEXTP_GPT2_DIR")) places.push_back(env);
  places.push_back(std::string(FLEXTP_SOURCE_DIR) + "/../shared/gpt2");
  for (const std::string& d : places)
    if (std::filesystem::exists(d + "/encoder.json") && std::filesystem::exists(d + "/vocab.bpe")) return d;
  MESSAGE("GPT-2's encoder.json and vocab.bpe are not in FLEXTP_GPT2_DIR nor in " FLEXTP_SOURCE_DIR
          "/../shared/gpt2: the tests against the real vocabulary are skipped");
  return std::nullopt;
}

const Gpt2Tokenizer* real() {
  static std::optional<Gpt2Tokenizer> tok = [] {
    std::optional<std::string> d = gpt2_dir();
    return d ? std::optional<Gpt2Tokenizer>(Gpt2Tokenizer::from_dir(*d)) : std::nullopt;
  }();
  return tok ? &*tok : nullptr;
}

std::vector<std::string> cut(const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view p : Gpt2Tokenizer::pieces(text)) out.emplace_back(p);
  return out;
}

// How GPT-2's files spell these bytes: a byte that prints stands for itself, the others
// (controls, space, 127-160, 173) for U+0100, U+0101, ... in byte order; in UTF-8.
std::string spell(const std::string& bytes) {
  std::string out;
  for (unsigned char byte : bytes) {
    char32_t c = 0, extra = 256;
    for (int b = 0; b <= byte; ++b) {
      bool prints = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      c = prints ? static_cast<char32_t>(b) : extra++;
    }
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {  // two UTF-8 bytes suffice: the alphabet ends below U+0800
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

uint64_t fnv1a64(const std::vector<int32_t>& ids) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int32_t id : ids)
    for (int k = 0; k < 4; ++k) h = (h ^ ((static_cast<uint32_t>(id) >> (8 * k)) & 0xFF)) * 0x100000001b3ull;
  return h;
}

// A small vocabulary in GPT-2's format: the 256 bytes, then merges "a b" -> "ab", "ab c" -> "abc".
struct TinyFiles {
  nlohmann::json encoder = nlohmann::json::object();
  std::string merges = "#version: 0.2\na b\nab c\n";
  TinyFiles() {
    for (int b = 0; b < 256; ++b) encoder[spell(std::string(1, static_cast<char>(b)))] = b;
    encoder["ab"] = 256;
    encoder["abc"] = 257;
    encoder["<|endoftext|>"] = 258;
  }
  Gpt2Tokenizer make() const { return Gpt2Tokenizer(encoder.dump(), merges, "tiny"); }
};

}  // namespace

TEST_CASE("GPT-2's pattern cuts text where the regular expression does") {
  CHECK(cut("Hello world") == std::vector<std::string>{"Hello", " world"});
  CHECK(cut("a  b") == std::vector<std::string>{"a", " ", " b"});
  CHECK(cut("it's they'll I'M") == std::vector<std::string>{"it", "'s", " they", "'ll", " I", "'", "M"});
  CHECK(cut("\n\nHi") == std::vector<std::string>{"\n", "\n", "Hi"});
  CHECK(cut("x   ") == std::vector<std::string>{"x", "   "});
  CHECK(cut("abc123 456!?") == std::vector<std::string>{"abc", "123", " 456", "!?"});
  CHECK(cut(" \t x") == std::vector<std::string>{" \t", " x"});
  CHECK(cut("na\u00efve \u65e5\u672c") == std::vector<std::string>{"na\u00efve", " \u65e5\u672c"});
  CHECK(cut("e\u0301") == std::vector<std::string>{"e", "\u0301"});  // a combining mark is not a letter
  CHECK(cut("").empty());
  // Bytes that are not UTF-8 are pieces of the "other" class, kept byte for byte.
  CHECK(cut("a\xff\xfe b") == std::vector<std::string>{"a", "\xff\xfe", " b"});
  for (std::string s : {"a\xc3", "\xe2\x82", "\xf0\x9f\x98", "\xed\xa0\x80x", "\xc0\xaf"}) {
    std::string joined;
    for (const std::string& p : cut(s)) joined += p;
    CHECK(joined == s);
  }
}

TEST_CASE("flextp's GPT-2 ids equal tiktoken's, and decoding gives the bytes back") {
  const Gpt2Tokenizer* tok = real();
  if (!tok) return;
  CHECK(tok->vocab_size() == 50257);
  CHECK(tok->end_of_text() == 50256);
  nlohmann::json golden =
      nlohmann::json::parse(read_text_file(std::string(FLEXTP_SOURCE_DIR) + "/tests/data/gpt2_golden.json"));
  REQUIRE(golden["strings"].size() > 50);
  for (const auto& s : golden["strings"]) {
    std::string text = s["text"].get<std::string>();
    std::vector<int32_t> want = s["ids"].get<std::vector<int32_t>>();
    CAPTURE(text);
    CHECK(tok->encode(text) == want);
    CHECK(tok->decode(want) == text);
  }
  const auto& corpus = golden["corpus"];
  std::string text = default_corpus_text();
  if (text.size() != corpus["bytes"].get<size_t>()) {
    MESSAGE("this machine's default corpus differs from the one the golden ids were made from: corpus check skipped");
    return;
  }
  std::vector<int32_t> ids = tok->encode(text);
  CHECK(ids.size() == corpus["tokens"].get<size_t>());
  std::vector<int32_t> first = corpus["first"].get<std::vector<int32_t>>();
  CHECK(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<long>(std::min(ids.size(), first.size()))) == first);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a64(ids)));
  CHECK(std::string(hash) == corpus["fnv1a64"].get<std::string>());
  CHECK(tok->decode(ids) == text);
}

TEST_CASE("any bytes survive encoding and decoding") {
  TinyFiles files;
  Gpt2Tokenizer tiny = files.make();
  // Pieces "abc" and " abcab"; in the second, both "a b" merge first, then "ab c".
  CHECK(tiny.encode("abc abcab") == std::vector<int32_t>{257, ' ', 257, 256});
  CHECK(tiny.vocab_size() == 259);
  CHECK(tiny.decode({258}) == "<|endoftext|>");
  std::vector<const Tokenizer*> toks{&tiny};
  if (const Gpt2Tokenizer* r = real()) toks.push_back(r);
  for (const Tokenizer* tok : toks)
    for (uint64_t trial = 0; trial < 200; ++trial) {
      std::string s(trial % 40, '\0');
      for (size_t i = 0; i < s.size(); ++i)
        s[i] = static_cast<char>(static_cast<int>(rng::uniform(trial, i, 7) * 256));
      CHECK(tok->decode(tok->encode(s)) == s);
    }
  CHECK_THROWS_WITH_AS(tiny.decode({259}), doctest::Contains("id 259 is outside the vocabulary of 259"), Error);
  // A long run is merged in n log n, not n^2: a megabyte of one letter is one piece.
  std::string run(1 << 20, 'a');
  if (const Gpt2Tokenizer* r = real()) CHECK(r->decode(r->encode(run)) == run);
}

TEST_CASE("damaged vocabulary files are named with what is wrong") {
  auto fails = [](const std::string& enc, const std::string& bpe, const std::string& says) {
    CHECK_THROWS_WITH_AS(Gpt2Tokenizer(enc, bpe, "dir"), doctest::Contains(says.c_str()), Error);
  };
  TinyFiles ok;  // each case below damages one thing of these files, which load whole
  Gpt2Tokenizer made = ok.make();
  CHECK(made.vocab_size() == 259);
  CHECK(made.encode("abc ab") == std::vector<int32_t>{257, ' ', 256});
  CHECK(made.end_of_text() == 258);
  CHECK(made.decode({258, 'x'}) == "<|endoftext|>x");
  fails("{not json", ok.merges, "dir/encoder.json is not valid JSON");
  fails("[1, 2]", ok.merges, "must be a JSON object");
  {
    TinyFiles f;
    f.encoder["abc"] = 256;
    fails(f.encoder.dump(), f.merges, "id 256 is given to two tokens");
  }
  {
    TinyFiles f;
    f.encoder["abc"] = 900;
    fails(f.encoder.dump(), f.merges, "has id 900; ids must be 0..258");
  }
  {
    TinyFiles f;
    f.encoder["abc"] = "x";
    fails(f.encoder.dump(), f.merges, "token 'abc' has id \"x\"");
  }
  fails(ok.encoder.dump(), "#version: 0.2\na b\nabc\n", "dir/vocab.bpe line 3: 'abc' is not a merge");
  fails(ok.encoder.dump(), "a b\nab  c\n", "line 2");
  fails(ok.encoder.dump(), "ab c\na b\n", "merge 1 ('ab c') must make token 256");
  fails(ok.encoder.dump(), "a b\nab c\nabc abc\nx y\n", "4 merges but dir/encoder.json only 259 tokens");
  {
    TinyFiles f;
    f.encoder.erase(spell("a"));
    f.encoder["\u4e2d"] = 'a';
    fails(f.encoder.dump(), f.merges, "outside GPT-2's byte alphabet");
  }
  {
    TinyFiles f;  // vocab.bpe cut short: no merge makes "abc", which encoding would never produce
    fails(f.encoder.dump(), "#version: 0.2\na b\n",
          "dir/encoder.json: token 'abc' (id 257) is made by no merge of dir/vocab.bpe, whose 1 merges make ids 256 to 256");
  }
  {
    TinyFiles f;
    f.encoder.erase("<|endoftext|>");
    fails(f.encoder.dump(), f.merges, "dir/encoder.json has no <|endoftext|> token");
  }
  test::TempDir dir("gpt2-files");
  CHECK_THROWS_WITH_AS(Gpt2Tokenizer::from_dir(dir.path.string()), doctest::Contains("has no encoder.json"), Error);
  CHECK_THROWS_WITH_AS(Gpt2Tokenizer::from_dir(""), doctest::Contains("needs the directory of its encoder.json and vocab.bpe"), Error);
}

TEST_CASE("GPT-2's files with half of the merges, or without <|endoftext|>, are refused") {
  std::optional<std::string> d = gpt2_dir();
  if (!d) return;
  const std::string enc = read_text_file(*d + "/encoder.json"), bpe = read_text_file(*d + "/vocab.bpe");
  size_t cut = bpe.find('\n');  // after the #version line, 25000 of the 50000 merges
  for (int line = 0; line < 25000; ++line) cut = bpe.find('\n', cut + 1);
  test::TempDir dir("gpt2-half");
  dir.write("encoder.json", enc);
  dir.write("vocab.bpe", bpe.substr(0, cut + 1));
  CHECK_THROWS_WITH_AS(Gpt2Tokenizer::from_dir(dir.path.string()),
                       doctest::Contains(("(id 25256) is made by no merge of " + dir.file("vocab.bpe") +
                                          ", whose 25000 merges make ids 256 to 25255").c_str()),
                       Error);
  nlohmann::json without = nlohmann::json::parse(enc);
  REQUIRE(without.erase("<|endoftext|>") == 1);
  dir.write("encoder.json", without.dump());
  dir.write("vocab.bpe", bpe);
  CHECK_THROWS_WITH_AS(Gpt2Tokenizer::from_dir(dir.path.string()),
                       doctest::Contains((dir.file("encoder.json") + " has no <|endoftext|> token").c_str()), Error);
}

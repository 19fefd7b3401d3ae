#include "data/gpt2_tokenizer.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <queue>

#include "core/error.h"
#include "data/token_files.h"
#include "data/unicode_classes.h"

namespace flextp {
namespace {

// GPT-2 spells every byte as a printable character: bytes that print stand for themselves, the
// others (controls, space, 127-160, 173) for 256, 257, ... in byte order.
struct ByteAlphabet {
  int byte_of[512];
  ByteAlphabet() {
    std::fill(std::begin(byte_of), std::end(byte_of), -1);
    char32_t extra = 256;
    for (int b = 0; b < 256; ++b) {
      bool prints = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      byte_of[prints ? static_cast<char32_t>(b) : extra++] = b;
    }
  }
};
const ByteAlphabet kAlphabet;

// A token as GPT-2's files spell it -> its bytes, or false when it has a character outside the alphabet.
bool token_bytes(const std::string& spelled, std::string& bytes) {
  bytes.clear();
  for (size_t at = 0, len = 0; at < spelled.size(); at += len) {
    char32_t c = next_code_point(spelled.data(), spelled.size(), at, len);
    if (c >= 512 || kAlphabet.byte_of[c] < 0) return false;
    bytes.push_back(static_cast<char>(kAlphabet.byte_of[c]));
  }
  return !bytes.empty();
}

enum class Kind { Letter, Number, Space, Other };
Kind kind_of(char32_t c) {
  return is_letter(c) ? Kind::Letter : is_number(c) ? Kind::Number : is_white_space(c) ? Kind::Space : Kind::Other;
}

// Length of the contraction ('s 't 're 've 'm 'll 'd) at `at`, or 0.
size_t contraction(std::string_view t, size_t at) {
  if (t[at] != '\'' || at + 1 >= t.size()) return 0;
  char a = t[at + 1], b = at + 2 < t.size() ? t[at + 2] : '\0';
  if (a == 's' || a == 'd' || a == 'm' || a == 't') return 2;
  if ((a == 'l' && b == 'l') || (a == 'v' && b == 'e') || (a == 'r' && b == 'e')) return 3;
  return 0;
}

}  // namespace

Gpt2Tokenizer Gpt2Tokenizer::from_dir(const std::string& dir) {
  FLEXTP_CHECK(!dir.empty(), "the GPT-2 tokenizer needs the directory of its encoder.json and vocab.bpe; none was given");
  for (const char* name : {"encoder.json", "vocab.bpe"})
    FLEXTP_CHECK(std::filesystem::is_regular_file(dir + "/" + name), "tokenizer directory ", dir, " has no ", name,
                 ": it must hold GPT-2's encoder.json and vocab.bpe");
  std::string encoder = read_text_file(dir + "/encoder.json");
  return Gpt2Tokenizer(encoder, read_text_file(dir + "/vocab.bpe"), dir);
}

namespace {

// encoder.json: token -> id, every id of 0..size-1 once. Returns the tokens by id.
std::vector<std::string> tokens_by_id(const std::string& encoder_json, const std::string& enc) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(encoder_json);
  } catch (const nlohmann::json::exception& e) {
    FLEXTP_FAIL(enc, " is not valid JSON: ", e.what());
  }
  FLEXTP_CHECK(j.is_object() && !j.empty(), enc, " must be a JSON object of token -> id");
  std::vector<bool> seen(j.size(), false);
  std::vector<std::string> spelled(j.size());
  for (const auto& [token, id] : j.items()) {
    FLEXTP_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < static_cast<int64_t>(j.size()),
                 enc, ": token '", token, "' has id ", id.dump(), "; ids must be 0..", j.size() - 1);
    size_t i = id.get<size_t>();
    FLEXTP_CHECK(!seen[i], enc, ": id ", i, " is given to two tokens ('", spelled[i], "' and '", token, "')");
    seen[i] = true;
    spelled[i] = token;
  }
  return spelled;
}

// vocab.bpe: an optional "#version" line, then one merge "A B" per line, lowest rank first.
std::vector<std::pair<std::string, std::string>> merges_of(const std::string& vocab_bpe, const std::string& bpe) {
  std::vector<std::pair<std::string, std::string>> merges;
  size_t line_no = 0;
  for (size_t at = 0; at < vocab_bpe.size();) {
    size_t end = vocab_bpe.find('\n', at);
    if (end == std::string::npos) end = vocab_bpe.size();
    std::string line = vocab_bpe.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    size_t space = line.find(' ');
    FLEXTP_CHECK(space != std::string::npos && space > 0 && space + 1 < line.size() &&
                     line.find(' ', space + 1) == std::string::npos,
                 bpe, " line ", line_no, ": '", line, "' is not a merge of two tokens 'A B'");
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return merges;
}

}  // namespace

Gpt2Tokenizer::Gpt2Tokenizer(const std::string& encoder_json, const std::string& vocab_bpe, const std::string& where) {
  const std::string enc = where + "/encoder.json", bpe = where + "/vocab.bpe";
  const std::vector<std::string> spelled = tokens_by_id(encoder_json, enc);
  const std::vector<std::pair<std::string, std::string>> merges = merges_of(vocab_bpe, bpe);
  const size_t tokens = spelled.size();
  bytes_of_.assign(tokens, std::string());
  // Ids below 256 + merges are the bytes and the merged tokens; above are special tokens.
  const size_t ordinary = 256 + merges.size();
  FLEXTP_CHECK(ordinary <= tokens, bpe, " has ", merges.size(), " merges but ", enc, " only ", tokens,
               " tokens: the files do not belong together");
  for (size_t i = 0; i < tokens; ++i) {
    if (i >= ordinary) {
      // Past the merged tokens only special tokens may follow: an ordinary one here is one that
      // no merge makes (a vocab.bpe cut short), and encoding would never produce it.
      const std::string& t = spelled[i];
      bool special = t.size() > 4 && t.rfind("<|", 0) == 0 && t.compare(t.size() - 2, 2, "|>") == 0;
      FLEXTP_CHECK(special, enc, ": token '", t, "' (id ", i, ") is made by no merge of ", bpe, ", whose ",
                   merges.size(), " merges make ids 256 to ", ordinary - 1, ", and is not a special token <|...|>: ",
                   bpe, " is incomplete, or the files do not belong together");
      bytes_of_[i] = t;  // a special token decodes to its own spelling
      if (t == "<|endoftext|>") end_of_text_ = static_cast<int32_t>(i);
      continue;
    }
    FLEXTP_CHECK(token_bytes(spelled[i], bytes_of_[i]), enc, ": token '", spelled[i],
                 "' has a character outside GPT-2's byte alphabet");
    FLEXTP_CHECK(i >= 256 || bytes_of_[i].size() == 1, enc, ": id ", i, " ('", spelled[i],
                 "') must be a single byte (ids 0-255 are the bytes)");
    rank_.emplace(bytes_of_[i], static_cast<int32_t>(i));
  }
  FLEXTP_CHECK(end_of_text_ >= 0, enc, " has no <|endoftext|> token: GPT-2's vocabulary ends with it (id 50256), "
               "and documents are separated by it");
  FLEXTP_CHECK(rank_.size() == ordinary, enc, ": two ordinary tokens have the same bytes");
  std::string a, b;
  for (size_t k = 0; k < merges.size(); ++k) {
    bool ok = token_bytes(merges[k].first, a) && token_bytes(merges[k].second, b);
    int32_t made = ok ? rank(a + b) : -1;
    FLEXTP_CHECK(made == static_cast<int32_t>(256 + k), bpe, " merge ", k + 1, " ('", merges[k].first, " ",
                 merges[k].second, "') must make token ", 256 + k, " of ", enc, ", but makes ",
                 made < 0 ? std::string("no token") : "token " + std::to_string(made),
                 ": the files do not belong together");
  }
}

int32_t Gpt2Tokenizer::rank(std::string_view bytes) const {
  auto it = rank_.find(std::string(bytes));
  return it == rank_.end() ? -1 : it->second;
}

std::vector<std::string_view> Gpt2Tokenizer::pieces(std::string_view t) {
  std::vector<std::string_view> out;
  const size_t n = t.size();
  size_t len = 0;
  auto run = [&](size_t from, Kind k) {  // end of the run of class k starting at `from`
    while (from < n) {
      char32_t c = next_code_point(t.data(), n, from, len);
      if (kind_of(c) != k) break;
      from += len;
    }
    return from;
  };
  for (size_t at = 0; at < n;) {
    size_t end = at + contraction(t, at);
    if (end == at) {
      size_t body = at + (t[at] == ' ' && at + 1 < n ? 1 : 0);  // " ?" before a letter, number or other
      Kind k = kind_of(next_code_point(t.data(), n, body, len));
      if (k != Kind::Space) {
        end = run(body, k);
      } else {
        // \s+(?!\S): a run of white space, less its last character when text follows it;
        // \s+ when that leaves nothing.
        size_t stop = run(at, Kind::Space), last = at;
        for (size_t p = at; p < stop; p += len) {
          next_code_point(t.data(), n, p, len);
          last = p;
        }
        end = stop == n || last == at ? stop : last;
      }
    }
    out.push_back(t.substr(at, end - at));
    at = end;
  }
  return out;
}

void Gpt2Tokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  // Parts are named by their first byte; next[i] is where the part after part i starts.
  const size_t n = piece.size();
  std::vector<size_t> next(n), prev(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) next[i] = i + 1, prev[i] = i == 0 ? n : i - 1;
  using Candidate = std::pair<int32_t, size_t>;  // merged rank, first part: lowest, then leftmost
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto offer = [&](size_t i) {
    if (i >= n || next[i] >= n) return;
    int32_t r = rank(piece.substr(i, next[next[i]] < n ? next[next[i]] - i : n - i));
    if (r >= 0) heap.push({r, i});
  };
  for (size_t i = 0; i + 1 < n; ++i) offer(i);
  while (!heap.empty()) {
    auto [r, i] = heap.top();
    heap.pop();
    if (!alive[i] || next[i] >= n) continue;
    size_t j = next[i], end = next[j] < n ? next[j] : n;
    if (rank(piece.substr(i, end - i)) != r) continue;  // stale: a neighbour merged since
    alive[j] = false;
    next[i] = next[j];
    if (next[i] < n) prev[next[i]] = i;
    if (prev[i] < n) offer(prev[i]);
    offer(i);
  }
  for (size_t i = 0; i < n; i = next[i]) out.push_back(rank(piece.substr(i, std::min(next[i], n) - i)));
}

std::vector<int32_t> Gpt2Tokenizer::encode(const std::string& text) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3);
  std::unordered_map<std::string_view, std::vector<int32_t>> seen;  // words repeat: merge each once
  for (std::string_view piece : pieces(text)) {
    int32_t whole = rank(piece);
    if (whole >= 0) {
      out.push_back(whole);
      continue;
    }
    auto it = seen.find(piece);
    if (it == seen.end()) {
      std::vector<int32_t> ids;
      encode_piece(piece, ids);
      if (seen.size() > (1u << 20)) seen.clear();
      it = seen.emplace(piece, std::move(ids)).first;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

std::string Gpt2Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    FLEXTP_CHECK(id >= 0 && id < vocab_size(), "gpt2 tokenizer: id ", id, " is outside the vocabulary of ",
                 vocab_size());
    out += bytes_of_[id];
  }
  return out;
}

}  // namespace flextp

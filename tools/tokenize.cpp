// flextp-tokenize: tokenises text once into llm.c-format shards (train and val), so that a corpus
// is trained on many times without tokenising it again:
//   python3 scripts/get_gpt2_tokenizer.py    (once: GPT-2's files into ~/.cache/flextp/gpt2)
//   flextp-tokenize --tokenizer gpt2 --input a.txt --input b.txt --out runs/shards
//   train --tokenizer gpt2 --data 'runs/shards/train_*.bin' --val-data 'runs/shards/val_*.bin'
// The validation share is the end of the token stream, as `train --data TEXT` would hold it out.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "data/batches.h"
#include "data/gpt2_tokenizer.h"
#include "data/token_files.h"
#include "core/parse_flags.h"
#include "core/temp_files.h"
#include "core/timer.h"
#include "data/tokenizer.h"

using namespace flextp;

namespace {

// The files of dir that `train --data 'DIR/train_*.bin'` (or val_*.bin) would read, by name.
std::vector<std::string> shards_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    bool shard_name = (name.rfind("train_", 0) == 0 || name.rfind("val_", 0) == 0) && name.size() > 4 &&
                      name.compare(name.size() - 4, 4, ".bin") == 0;
    if (shard_name && entry.is_regular_file()) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The shards --out holds already: refused unless --force.
std::vector<std::string> old_shards_in(const std::string& out, bool force) {
  const std::vector<std::string> old_shards = shards_in(out);
  FLEXTP_CHECK(old_shards.empty() || force, "--out ", out, " already holds shards (", old_shards.front(),
               old_shards.size() > 1 ? " and " + std::to_string(old_shards.size() - 1) + " more" : std::string(),
               "), which train_*.bin and val_*.bin would read beside the new ones: remove them, or pass --force "
               "to replace them");
  return old_shards;
}

// Removes the old shards (--force) and writes the new ones, train_NNNNNN.bin and val_NNNNNN.bin of
// `shard_tokens` tokens each (the last may be short).
void replace_shards(const std::string& out, const std::vector<std::string>& old_shards, const std::vector<int32_t>& train,
                    const std::vector<int32_t>& val, int64_t shard_tokens) {
  std::error_code ec;
  for (const std::string& name : old_shards) {
    std::filesystem::remove(std::filesystem::path(out) / name, ec);
    FLEXTP_CHECK(!ec, "--force: cannot remove the old shard ", out, "/", name, ": ", ec.message());
  }
  if (!old_shards.empty()) std::printf("removed %zu old shards from %s\n", old_shards.size(), out.c_str());
  for (auto [name, tokens] : {std::pair{"train", &train}, std::pair{"val", &val}}) {
    for (size_t first = 0, n = 0; first < tokens->size(); first += static_cast<size_t>(shard_tokens), ++n) {
      size_t last = std::min(tokens->size(), first + static_cast<size_t>(shard_tokens));
      char file[64];
      std::snprintf(file, sizeof file, "/%s_%06zu.bin", name, n);
      write_shard(out + file, std::vector<int32_t>(tokens->begin() + static_cast<long>(first), tokens->begin() + static_cast<long>(last)));
      std::printf("wrote %s%s: %zu tokens\n", out.c_str(), file, last - first);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flextp-tokenize: text -> llm.c token shards (train_NNNNNN.bin, val_NNNNNN.bin)"};
  std::string kind = "byte", dir, out;
  std::vector<std::string> inputs;
  double val_fraction = 0.1;
  int64_t shard_tokens = 100'000'000;
  app.add_option("--tokenizer", kind, "byte or gpt2")->check(CLI::IsMember({"byte", "gpt2"}));
  app.add_option("--tokenizer-dir", dir, "--tokenizer gpt2: directory holding encoder.json and vocab.bpe (default: the cache that "
                 "scripts/get_gpt2_tokenizer.py fills)");
  app.add_option("--input", inputs, "text files, in order (default: the default corpus, Debian's fortunes)");
  app.add_option("--out", out, "directory for the shards")->required();
  app.add_option("--val-fraction", val_fraction, "share of the tokens (the end) written as val shards")
      ->check(within(0, 0.9));
  app.add_option("--shard-tokens", shard_tokens, "tokens per shard file")->check(within(1, 1 << 30));
  bool force = false;
  app.add_flag("--force", force, "replace the shards --out already holds (they are removed first)");
  if (std::optional<int> status = parse_flags(app, argc, argv, "flextp-tokenize")) return *status;
  try {
    // Old shards beside new ones would be read with them by train_*.bin: refused before the
    // (possibly long) tokenising, removed only once the new tokens are ready.
    const std::vector<std::string> old_shards = old_shards_in(out, force);
    std::unique_ptr<Tokenizer> tok = tokenizer_from_flags(kind, dir);
    FLEXTP_CHECK(tok->vocab_size() <= 65536, "shards hold 16-bit ids; the vocabulary of ", tok->vocab_size(), " does not fit");
    // Documents are separated by GPT-2's end-of-text token (as llm.c's shards are), when it has one.
    int32_t separator = kind == "gpt2" ? static_cast<const Gpt2Tokenizer&>(*tok).end_of_text() : -1;
    std::vector<int32_t> all;
    double bytes = 0, seconds = 0;
    auto add = [&](const std::string& text) {
      double start = now_ms();
      std::vector<int32_t> ids = tok->encode(text);
      seconds += (now_ms() - start) / 1000.0;
      bytes += static_cast<double>(text.size());
      if (separator >= 0) all.push_back(separator);
      all.insert(all.end(), ids.begin(), ids.end());
    };
    if (inputs.empty()) add(default_corpus_text());
    for (const std::string& path : inputs) {
      std::string text = read_text_file(path);
      check_text(path, text);
      add(text);
    }
    FLEXTP_CHECK(bytes > 0, "no text to tokenize: ", inputs.size() == 1 ? "--input " + inputs.front() + " is empty"
                                                                        : "every --input is empty");
    std::vector<int32_t> train, val;
    split_tokens(all, val_fraction, train, val);
    try {
      make_directories(out);
    } catch (const Error& e) {
      throw Error("--out " + out + ": " + e.what());
    }
    replace_shards(out, old_shards, train, val, shard_tokens);
    std::printf("%s: %.1f MB of text -> %zu tokens (%zu train, %zu val); encoding %.2f MB/s\n", tok->name(), bytes / 1e6,
                all.size(), train.size(), val.size(), seconds > 0 ? bytes / 1e6 / seconds : 0.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flextp-tokenize: error: %s\n", e.what());
    return 1;
  }
}

// Fuzzes GPT-2's BPE loaders (encoder.json and vocab.bpe: the input up to its first NUL byte is
// the one, the rest the other) and, with a tokenizer that loaded, encoding: any bytes must encode
// and decode back to themselves.
#include <cstdlib>

#include "core/error.h"
#include "data/gpt2_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string all(reinterpret_cast<const char*>(data), size);
  size_t cut = all.find('\0');
  std::string encoder = all.substr(0, cut), merges = cut == std::string::npos ? "" : all.substr(cut + 1);
  try {
    flextp::Gpt2Tokenizer tok(encoder, merges, "fuzz");
    if (tok.decode(tok.encode(all)) != all) std::abort();
  } catch (const flextp::Error&) {
  }
  // The pre-tokeniser alone, on the raw bytes: its pieces cover the input exactly.
  std::string joined;
  for (std::string_view p : flextp::Gpt2Tokenizer::pieces(all)) {
    if (p.empty()) std::abort();
    joined += p;
  }
  if (joined != all) std::abort();
  return 0;
}

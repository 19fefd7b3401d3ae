#include "data/tokenizer.h"

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

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& kind, const std::string& dir) {
  if (kind == "byte") return std::make_unique<ByteTokenizer>();
  if (kind == "gpt2") return std::make_unique<Gpt2Tokenizer>(Gpt2Tokenizer::from_dir(dir));
  FLEXTP_FAIL("tokenizer '", kind, "' is not one of byte, gpt2");
}

}  // namespace flextp

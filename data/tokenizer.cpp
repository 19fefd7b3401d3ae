#include "data/tokenizer.h"

#include "core/error.h"

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

}  // namespace flextp

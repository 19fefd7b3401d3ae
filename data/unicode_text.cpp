#include <cstddef>

#include "data/unicode_classes.h"

namespace flextp {

bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

char32_t next_code_point(const char* text, size_t size, size_t at, size_t& length) {
  const auto* s = reinterpret_cast<const unsigned char*>(text);
  unsigned char b = s[at];
  length = 1;
  if (b < 0x80) return b;
  // An invalid byte stands for itself, outside the code point range so that it is in no class.
  const char32_t invalid = 0x110000 + b;
  size_t need = b >= 0xF0 ? (b <= 0xF4 ? 3 : 0) : b >= 0xE0 ? 2 : b >= 0xC2 ? 1 : 0;
  if (need == 0 || at + need >= size) return invalid;
  char32_t c = b & (0x3F >> need);
  for (size_t k = 1; k <= need; ++k) {
    unsigned char t = s[at + k];
    if ((t & 0xC0) != 0x80) return invalid;
    c = (c << 6) | (t & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if ((need == 2 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) || (need == 3 && (c < 0x10000 || c > 0x10FFFF)))
    return invalid;
  length = need + 1;
  return c;
}

}  // namespace flextp

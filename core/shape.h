#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace flextp {

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// a * b, or nothing when it does not fit 64 bits (sizes from flags and files must not wrap).
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// The element count of `s`, or nothing when it does not fit 64 bits.
inline std::optional<int64_t> checked_numel(const Shape& s) {
  std::optional<int64_t> n = 1;
  for (int64_t d : s)
    if (n) n = checked_mul(*n, d);
  return n;
}

inline std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// True when `small`, stripped of leading 1s, is a suffix of `big`: it repeats every numel(small)
// (a bias against activations).
inline bool is_suffix(const Shape& small, const Shape& big) {
  size_t lead = 0;
  while (lead < small.size() && small[lead] == 1) ++lead;
  size_t n = small.size() - lead;
  if (n > big.size()) return false;
  for (size_t i = 0; i < n; ++i)
    if (small[lead + i] != big[big.size() - n + i]) return false;
  return true;
}

}  // namespace flextp

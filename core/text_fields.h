#pragma once
// Reading the small text specs of flags, traces and checkpoint metadata: fields split at a
// separator, and whole-string numbers. Each caller words its own error, naming its spec.
#include <charconv>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace flextp {

// "a:b:" -> {"a", "b", ""} and "" -> {""}: an empty field stays visible, so a spec with a
// missing value is refused instead of read as a shorter one.
inline std::vector<std::string> split_fields(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t at = s.find(sep); at != std::string::npos; at = s.find(sep, start)) {
    out.push_back(s.substr(start, at - start));
    start = at + 1;
  }
  out.push_back(s.substr(start));
  return out;
}

// The whole of `s` as an integer, or nothing (also for trailing text, overflow or an empty string).
inline std::optional<int64_t> whole_int(const std::string& s) {
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The whole of `s` as a number, or nothing.
inline std::optional<double> whole_double(const std::string& s) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The whole of `s` as an unsigned 64-bit integer (a seed's range), or nothing; no sign.
inline std::optional<uint64_t> whole_uint(const std::string& s) {
  try {
    size_t used = 0;
    unsigned long long v = std::stoull(s, &used);
    if (used == s.size() && s[0] != '-' && s[0] != '+') return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The shortest text that whole_double reads back as exactly `v` ("0.1", "3e-05").
inline std::string shortest_text(double v) {
  char s[32];
  return std::string(s, std::to_chars(s, s + sizeof s, v).ptr);
}

// A setting's value as text and back (false: the text is not one; the value is left as it was):
// flags recorded in checkpoints (train/option_table.h) and GPTConfig's fields (nn/config.h).
template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
std::string value_text(T v) {
  return std::to_string(v);
}
inline std::string value_text(double v) { return shortest_text(v); }
inline std::string value_text(const std::string& v) { return v; }

template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
bool value_from_text(const std::string& s, T& v) {
  if constexpr (std::is_signed_v<T>) {
    std::optional<int64_t> n = whole_int(s);
    if (!n || *n < std::numeric_limits<T>::min() || *n > std::numeric_limits<T>::max()) return false;
    v = static_cast<T>(*n);
  } else {
    std::optional<uint64_t> n = whole_uint(s);
    if (!n || *n > std::numeric_limits<T>::max()) return false;
    v = static_cast<T>(*n);
  }
  return true;
}
inline bool value_from_text(const std::string& s, double& v) {
  std::optional<double> n = whole_double(s);
  if (n) v = *n;
  return n.has_value();
}
inline bool value_from_text(const std::string& s, std::string& v) {
  v = s;
  return true;
}

}  // namespace flextp

#pragma once
// Every failure in flextp is a flextp::Error that names the place and, where possible, a hint.
#include <sstream>
#include <stdexcept>
#include <string>

namespace flextp {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Whether FLEXTP_CHECK's messages end with the source line that threw them, " (at file:line)":
// on in the library and its tests; flextp's programs turn it off as they read their flags
// (core/parse_flags.h), so that a user reads the problem alone, and train's --debug turns it back
// on. Set once, before any thread starts.
inline bool error_locations = true;

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}

inline std::string location(const char* file, int line) {
  return error_locations ? concat(" (at ", file, ":", line, ")") : std::string();
}
}  // namespace detail

}  // namespace flextp

// FLEXTP_CHECK(cond, "message parts", ...) throws flextp::Error("message (at file:line)").
#define FLEXTP_CHECK(cond, ...)                                                                      \
  do {                                                                                               \
    if (!(cond))                                                                                     \
      throw ::flextp::Error(::flextp::detail::concat(__VA_ARGS__, ::flextp::detail::location(__FILE__, __LINE__))); \
  } while (0)

#define FLEXTP_FAIL(...) FLEXTP_CHECK(false, __VA_ARGS__)

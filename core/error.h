#pragma once
// Every failure in flextp is a flextp::Error that names the place and, where possible, a hint.
#include <sstream>
#include <stdexcept>
#include <string>

namespace flextp {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}
}  // namespace detail

}  // namespace flextp

// FLEXTP_CHECK(cond, "message parts", ...) throws flextp::Error("message (at file:line)").
#define FLEXTP_CHECK(cond, ...)                                                             \
  do {                                                                                      \
    if (!(cond))                                                                            \
      throw ::flextp::Error(::flextp::detail::concat(__VA_ARGS__, " (at ", __FILE__, ":",   \
                                                     __LINE__, ")"));                       \
  } while (0)

#define FLEXTP_FAIL(...) FLEXTP_CHECK(false, __VA_ARGS__)

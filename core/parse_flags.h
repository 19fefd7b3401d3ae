#pragma once
// How flextp's programs end on flags CLI11 refuses: like every other error of theirs,
// "PROGRAM: error: MESSAGE" and status 1 (CLI11's own codes, 105-114, say nothing to a script
// beyond "not 0"), while --help still prints and exits 0.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <optional>
#include <string>

#include "core/text_fields.h"

namespace flextp {

// Every number flag of `app` takes only what it can hold, checked here in one place for all:
// a floating flag refuses NaN and infinity (and numbers past a double's range), an integer flag
// numbers past 64 bits. CLI11's range and sign checks let NaN through (every comparison with it
// is false), and a NaN would silently switch off what the flag sets (--grad-clip nan: no
// clipping; --rank-timeout nan: no watchdog); CLI11 reads 99999999999999999999 as 2^63 - 1.
inline void require_representable_numbers(CLI::App& app) {
  const CLI::Validator finite(
      [](std::string& value) {
        std::optional<double> v = whole_double(value);
        return v && std::isfinite(*v) ? std::string() : "'" + value + "' is not a finite number";
      },
      "");
  auto fits = [](bool is_signed) {
    return CLI::Validator(
        [is_signed](std::string& value) {
          errno = 0;
          char* end = nullptr;
          if (is_signed) (void)std::strtoll(value.c_str(), &end, 0);
          else (void)std::strtoull(value.c_str(), &end, 0);
          return errno != ERANGE ? std::string()
                                 : "'" + value + "' does not fit 64 bits (at most " +
                                       (is_signed ? "9223372036854775807" : "18446744073709551615") + ")";
        },
        "");
  };
  // First among each flag's checks (transform puts it there), so that its message is the one given.
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type.rfind("FLOAT", 0) == 0) option->transform(finite);
    else if (type.rfind("INT", 0) == 0) option->transform(fits(true));
    else if (type.rfind("UINT", 0) == 0) option->transform(fits(false));
  }
}

// Parses the flags; an exit status when the program must end here, nothing when it goes on.
// Number flags are checked as require_representable_numbers says.
inline std::optional<int> parse_flags(CLI::App& app, int argc, char** argv, const char* program) {
  require_representable_numbers(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::fprintf(stderr, "%s: error: %s\nRun with --help for more information.\n", program, e.what());
    return 1;
  }
  return std::nullopt;
}

}  // namespace flextp

#pragma once
// How flextp's programs end on flags CLI11 refuses: like every other error of theirs,
// "PROGRAM: error: MESSAGE" and status 1 (CLI11's own codes, 105-114, say nothing to a script
// beyond "not 0"), while --help and --version still print and exit 0. A misspelt flag, on the
// command line or as a key of a --config file, gets the nearest real one as a suggestion.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/text_fields.h"

namespace flextp {

// Bounds of number flags, for every program: a refusal states the bound as written ("--temperature:
// '-1' must be >= 0", "--dropout: '2' must be in [0, 0.99]"), where CLI11's ranges print both
// ends with std::to_string ("not in range 0.000000 to 179769313486231570814527..."). --help shows
// NONNEGATIVE, POSITIVE or the interval.
inline CLI::Validator bounded(double low, double high, bool open_low, const std::string& name) {
  auto text = [](double v) {
    char s[32];
    std::snprintf(s, sizeof s, "%.15g", v);
    return std::string(s);
  };
  const std::string rule = high < HUGE_VAL ? "in [" + text(low) + ", " + text(high) + "]"
                                           : (open_low ? "> " : ">= ") + text(low);
  return CLI::Validator(
      [=](std::string& value) {
        std::optional<double> v = whole_double(value);
        bool holds = v && (open_low ? *v > low : *v >= low) && *v <= high;
        return holds ? std::string() : "'" + value + "' must be " + rule;
      },
      name.empty() ? rule : name);
}
inline CLI::Validator at_least_zero() { return bounded(0, HUGE_VAL, false, "NONNEGATIVE"); }
inline CLI::Validator above_zero() { return bounded(0, HUGE_VAL, true, "POSITIVE"); }
inline CLI::Validator within(double low, double high) { return bounded(low, high, false, ""); }

// Every number flag of `app` takes only what it can hold, checked here in one place for all:
// a floating flag refuses NaN and infinity (and numbers past a double's range), an integer flag
// numbers past 64 bits; either refuses a word ("--lr abc": "'abc' is not a finite number"). CLI11's range and sign checks let NaN through (every comparison with it
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
          if (end == value.c_str() || *end != '\0') return "'" + value + "' is not a whole number";
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

// The long flag of `app` nearest to `typed` ("--step" -> "--steps"): at most two edits away, or
// one that `typed` begins; "" when none is that near.
inline std::string nearest_flag(const CLI::App& app, std::string typed) {
  typed = typed.substr(0, typed.find('='));                 // --step=10
  typed = "--" + typed.substr(std::min(typed.size(), typed.find_first_not_of('-')));  // -step, or a config key
  auto edits = [](const std::string& a, const std::string& b) {  // Levenshtein distance
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diagonal = above;
      }
    }
    return row[b.size()];
  };
  std::string best;
  size_t best_edits = 3;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      std::string flag = "--" + name;
      size_t d = edits(typed, flag);
      if (typed.size() > 3 && flag.rfind(typed, 0) == 0) d = std::min<size_t>(d, 1);  // a flag cut short
      if (d < best_edits) best = flag, best_edits = d;
    }
  }
  return best;
}

// CLI11's message for a refused flag or config key, with a suggestion where one is near.
inline std::string flag_error_message(const CLI::App& app, const CLI::ParseError& e) {
  std::string message = e.what();
  auto hint = [&](const std::string& typed) {
    std::string near = nearest_flag(app, typed);
    return near.empty() ? std::string() : " (did you mean " + near + "?)";
  };
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    std::string out;
    for (const std::string& arg : app.remaining())
      if (arg.size() > 1 && arg[0] == '-') out += (out.empty() ? "" : "; ") + ("unknown flag " + arg) + hint(arg);
    if (!out.empty()) return out;
  }
  const CLI::Option* config = app.get_config_ptr();
  if (config && dynamic_cast<const CLI::FileError*>(&e)) return config->get_name() + ": " + message;
  const std::string unparsed = "INI was not able to parse ";
  if (dynamic_cast<const CLI::ConfigError*>(&e) && message.rfind(unparsed, 0) == 0) {
    std::string key = message.substr(unparsed.size());
    std::string file = config && !config->results().empty() ? config->results().back() : "the config file";
    const std::string where = (config ? config->get_name() : std::string("config")) + " " + file + ": ";
    if (key.find_first_of(" \t") != std::string::npos)  // CLI11 reads a line without '=' as a flag's name
      return where + "'" + key + "' is not a line KEY = VALUE";
    if (key.size() > 3 && (key.substr(key.size() - 3) == ".++" || key.substr(key.size() - 3) == ".--"))
      return where + "section [" + key.substr(0, key.size() - 3) + "]: no sections, every KEY = VALUE at the top";
    return where + "unknown key '" + key + "'" + hint(key);
  }
  return message;
}

// Parses the flags; an exit status when the program must end here, nothing when it goes on.
// Number flags are checked as require_representable_numbers says. The program's errors are for
// its user from here on: they carry no source line (error_locations; train's --debug wants them).
inline std::optional<int> parse_flags(CLI::App& app, int argc, char** argv, const char* program) {
  error_locations = false;
  require_representable_numbers(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::fprintf(stderr, "%s: error: %s\nRun with --help for more information.\n", program,
                 flag_error_message(app, e).c_str());
    return 1;
  }
  return std::nullopt;
}

}  // namespace flextp

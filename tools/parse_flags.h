#pragma once
// How flextp's programs end on flags CLI11 refuses: like every other error of theirs,
// "PROGRAM: error: MESSAGE" and status 1 (CLI11's own codes, 105-114, say nothing to a script
// beyond "not 0"), while --help still prints and exits 0.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <optional>

namespace flextp {

// Parses the flags; an exit status when the program must end here, nothing when it goes on.
inline std::optional<int> parse_flags(CLI::App& app, int argc, char** argv, const char* program) {
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

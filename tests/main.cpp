// The tests run in a scratch directory of their own, removed at the end: what the programs they
// start write by default (train's runs/NAME/ checkpoints) goes with it, and never into the build
// or source tree. Every path a test names is absolute (FLEXTP_SOURCE_DIR, test::TempDir).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const fs::path scratch = fs::temp_directory_path() / ("flextp-tests-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  fs::current_path(scratch);
  doctest::Context context(argc, argv);
  int status = context.run();
  fs::current_path(fs::temp_directory_path());
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return status;
}

// Rules the sources keep, read from the files of the checkout: product code (the library, train
// and the tools) includes nothing from bench/; each layer includes only the layers below it
// (docs/design.md); no program bounds a number flag with CLI11's own range checks, whose refusals
// print the bounds with std::to_string ("0.000000 to 1797..."); the faults tests inject through the
// environment are read in one place.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

// "file:line: text" of every line of code (comments cut) in the C++ sources under `places`
// (directories or files of the checkout) that matches `pattern`.
std::vector<std::string> lines_matching(const std::vector<std::string>& places, const std::regex& pattern) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const std::string& place : places) {
    fs::path p = fs::path(FLEXTP_SOURCE_DIR) / place;
    if (fs::is_regular_file(p)) files.push_back(p);
    else
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.path().extension() == ".cpp" || e.path().extension() == ".h" || e.path().extension() == ".cu")
          files.push_back(e.path());
  }
  std::vector<std::string> found;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      if (std::regex_search(line.substr(0, line.find("//")), pattern))
        found.push_back(fs::relative(file, FLEXTP_SOURCE_DIR).generic_string() + ":" + std::to_string(n) + ": " + line);
    }
  }
  return found;
}

const std::vector<std::string> kProduct = {"core", "nn", "store", "parallel", "optim", "data", "train", "tools", "train.cpp"};

}  // namespace

TEST_CASE("product code includes nothing from bench/") {
  for (const std::string& line : lines_matching(kProduct, std::regex(R"(^\s*#\s*include\s*["<]bench/)")))
    FAIL_CHECK(line, ": the library, train and the tools stand without the benchmarks (core/timer.h has the clock)");
}

TEST_CASE("no program bounds a number flag with CLI11's ranges") {
  const std::regex cli11_range(R"(CLI::(Range|Bound|NonNegativeNumber|PositiveNumber)\b)");
  for (const std::string& line : lines_matching({"core", "train", "train.cpp", "tools", "bench"}, cli11_range))
    FAIL_CHECK(line, ": bound it with core/parse_flags.h's at_least_zero, above_zero or within, which say the bound");
}

TEST_CASE("each layer includes only the layers below it") {
  // nn/ is the model; store/ saves and loads it (and the optimizer's state); train/ runs both;
  // parallel/ is what the model stands on. An include the other way ties a layer to its users.
  const struct {
    const char* layer;
    const char* above;  // the folders it must not include from
    const char* instead;
  } rules[] = {
      {"nn", "optim|train|store", "the model knows no optimizer, trainer or file format: move the dependency the other way"},
      {"parallel", "nn|train|store", "parallelism knows no model, trainer or file format: pass it rows, units and bytes"},
      {"store", "train", "the file formats know no trainer: pass them what they write"},
  };
  for (const auto& r : rules)
    for (const std::string& line :
         lines_matching({r.layer}, std::regex(std::string(R"(^\s*#\s*include\s*["<]()") + r.above + ")/")))
      FAIL_CHECK(line, ": ", std::string(r.instead));
}

TEST_CASE("injected faults are read from the environment in one place, core/injected_faults.cpp") {
  std::vector<std::string> found = lines_matching(kProduct, std::regex("FLEXTP_FAULT_"));
  for (const std::string& line : found) {
    if (line.rfind("core/injected_faults.", 0) == 0) continue;
    INFO(line, ": an injected fault goes through core/injected_faults.h, where every other one is");
    CHECK(false);
  }
  CHECK(found.size() >= 5);  // the rule still finds them where they are
}

// Library errors name the problem in the library's terms; only train speaks of its flags, and
// puts the flag in front of a library error (with_flag, train_options.h).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "train_options.h"

using namespace flextp;

TEST_CASE("train puts the flag before a library error and passes values through") {
  CHECK(with_flag("--steps", [] { return 7; }) == 7);
  std::string said;
  try {
    with_flag("--straggler", []() -> int { FLEXTP_FAIL("straggler '1:x': 'x' is not a number"); });
  } catch (const Error& e) {
    said = e.what();
  }
  CHECK(said.rfind("--straggler: straggler '1:x': 'x' is not a number", 0) == 0);
}

TEST_CASE("library sources name no flag of train's in their messages, but for the listed ones") {
  // Messages that still name a flag because a test calls the library and asserts the flag: each is
  // for the lead to settle (see the report of issue 15, item 6), and the list may only shrink.
  const std::set<std::string> waiting{
      "nn/config.cpp",           // --n-layer ... --dropout (tests/test_gpt.cpp asserts --n-embd, --mlp-unit)
      "parallel/comm/cost_model.cpp",  // --comm (tests/test_balance.cpp)
      "parallel/balance/resizer.cpp",     // --priority (tests/test_resize.cpp)
      "parallel/balance/balancer.cpp",    // --balance, --lambda (owned by the balancing policies' work)
      "parallel/tp/partition.cpp",   // --tp-weights (owned by the unit registry's work)
      "data/gpt2_tokenizer.cpp",  // --tokenizer-dir (tests/test_gpt2_tokenizer.cpp)
  };
  const std::regex flag_in_string("\"[^\"]*--[a-z][a-z-]*[^\"]*\"");
  std::set<std::string> found;
  for (const char* dir : {"core", "nn", "parallel", "optim", "data"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(FLEXTP_SOURCE_DIR) + "/" + dir)) {
      std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".h" && ext != ".cu") continue;
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);) {
        std::string code = line.substr(0, line.find("//"));
        if (std::regex_search(code, flag_in_string))
          found.insert(std::filesystem::relative(e.path(), FLEXTP_SOURCE_DIR).generic_string());
      }
    }
  for (const std::string& file : found) {
    INFO(file, " has a message that names a flag of train's");
    CHECK(waiting.count(file) == 1);
  }
}

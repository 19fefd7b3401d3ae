// Library errors name the problem in the library's terms; only train speaks of its flags, and
// puts the flag in front of a library error (with_flag, train/flags.h).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "data/tokenizer.h"
#include "train/flags.h"
#include "train/model_config.h"

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

TEST_CASE("train names its flags where the model's settings are wrong") {
  GPTConfig c;
  c.n_head = 5;
  CHECK_THROWS_WITH_AS(validate_model_flags(c),
                       doctest::Contains("--n-embd 128 is not divisible by --n-head 5: every head needs --n-embd / "
                                         "--n-head channels"),
                       Error);
  c = GPTConfig{};
  c.mlp_unit = 100;
  CHECK_THROWS_WITH_AS(validate_model_flags(c), doctest::Contains("--mlp-unit 100 must divide"), Error);
  c = GPTConfig{};
  c.dropout = 1;
  CHECK_THROWS_WITH_AS(validate_model_flags(c), doctest::Contains("--dropout must be in [0, 1)"), Error);
  validate_model_flags(GPTConfig{});  // a good one passes
  CHECK_THROWS_WITH_AS(tokenizer_from_flags("gpt2", "/no/such/dir"),
                       doctest::Contains("--tokenizer-dir: tokenizer directory /no/such/dir has no"), Error);
}

TEST_CASE("library sources name no flag of train's in their messages") {
  const std::regex flag_in_string("\"[^\"]*--[a-z][a-z-]*[^\"]*\"");
  std::set<std::string> found;
  for (const char* dir : {"core", "nn", "store", "parallel", "optim", "data"})
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
  // The flag handling that flextp's programs share lives beside the library, which names flags.
  found.erase("core/parse_flags.h");
  found.erase("data/tokenizer.cpp");
  for (const std::string& file : found) {
    INFO(file, " has a message that names a flag of train's: name the problem, and let train (train/flags.h, "
               "with_flag) put the flag in front");
    CHECK(false);
  }
}

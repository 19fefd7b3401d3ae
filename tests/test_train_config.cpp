// train's command line as a user meets it: a --config file that sets any flag (the command line
// overriding it), --version, a suggestion for a misspelt flag, number flags that say what is wrong
// (and their bounds as written, in flextp-sample and flextp-tokenize too), and errors without
// source locations unless --debug.
#include <doctest/doctest.h>

#include <regex>
#include <string>

#include "core/parse_flags.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "train/flags.h"

using namespace flextp;
using test::kTiny;
using test::Run;
using test::run_train;

namespace {

bool has(const Run& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

// Refused with status 1, `message` after "train: error: ".
void refused(const Run& r, const std::string& message) {
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(has(r, "train: error: "));
  CHECK(has(r, message));
}

}  // namespace

TEST_CASE("a --config file sets any flag, and the command line overrides it") {
  test::TempDir dir("config");
  const std::string data = test::corpus(dir);
  // TOML: numbers, a string, a flag, a repeatable flag as a list.
  const std::string config = dir.write("run.toml", "steps = 3\nlog-every = 1\nlr = 2e-3\ndata = \"" + data +
                                                        "\"\nno-save = true\nstraggler = [\"0:1\"]\n");
  const std::string run = std::string(kTiny) + " --config " + config;
  Run r = run_train(run + " --metrics " + dir.file("a.jsonl"));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  std::vector<nlohmann::json> a = test::read_metrics(dir.file("a.jsonl"));
  REQUIRE(a.size() == 3);               // steps = 3
  CHECK(a[2]["lr"].get<double>() > 0);
  CHECK_FALSE(has(r, "step     2 |"));  // log-every = 1, but kTiny's --log-every 100 wins
  CHECK_FALSE(has(r, "checkpoint:"));  // no-save = true
  Run over = run_train(run + " --steps 2 --metrics " + dir.file("b.jsonl"));
  REQUIRE_MESSAGE(over.status == 0, over.output);
  std::vector<nlohmann::json> b = test::read_metrics(dir.file("b.jsonl"));
  REQUIRE(b.size() == 2);  // --steps 2 on the command line wins
  CHECK(b[0]["loss"] == a[0]["loss"]);
  // The same run from an INI file.
  const std::string ini = dir.write("run.ini", "steps=2\ndata=" + data + "\nno-save=true\n");
  Run from_ini = run_train(std::string(kTiny) + " --config " + ini + " --metrics " + dir.file("c.jsonl"));
  REQUIRE_MESSAGE(from_ini.status == 0, from_ini.output);
  CHECK(test::read_metrics(dir.file("c.jsonl")).size() == 2);
}

TEST_CASE("a missing, malformed or misspelt --config file is refused, naming the problem") {
  test::TempDir dir("badconfig");
  const std::string tiny = std::string(kTiny) + " --no-save ";
  refused(run_train(tiny + "--config " + dir.file("none.toml")), "--config: " + dir.file("none.toml"));
  refused(run_train(tiny + "--config " + dir.write("typo.toml", "step = 3\n")),
          "unknown key 'step' (did you mean --steps?)");
  refused(run_train(tiny + "--config " + dir.write("word.toml", "lr = \"abc\"\n")), "--lr: 'abc' is not a finite number");
  refused(run_train(tiny + "--config " + dir.write("junk.toml", "steps = 2\nthis is not a setting\n")),
          "junk.toml: 'this is not a setting' is not a line KEY = VALUE");
  refused(run_train(tiny + "--config " + dir.write("section.toml", "[model]\nn-layer = 2\n")),
          "section [model]: no sections");
}

TEST_CASE("train --version names the project's version") {
  Run r = run_train("--version");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.rfind("flextp 0.", 0) == 0);
}

TEST_CASE("a misspelt flag gets the nearest real one as a suggestion") {
  refused(run_train("--step 10"), "unknown flag --step (did you mean --steps?)");
  refused(run_train("--lerning-rate 1"), "unknown flag --lerning-rate");
  refused(run_train("--temp=0.5"), "did you mean --temperature?");
}

TEST_CASE("a number flag given a word says it is not a number") {
  refused(run_train("--lr abc"), "--lr: 'abc' is not a finite number");
  Run r = run_train("--lr abc");
  CHECK(r.output.size() < 200);  // no range of 309 digits
  refused(run_train("--steps abc"), "--steps: 'abc' is not a whole number");
  refused(run_train("--steps 1.5"), "--steps: '1.5' is not a whole number");
}

TEST_CASE("a number flag out of its bounds states the bound as written, in every program") {
  // Every number flag of train, given values below and above any bound: a refusal that is not the
  // number check's says "must be >= X", "> X" or "in [X, Y]", never CLI11's "0.000000 to 1797...".
  const std::regex bound(R"(^--[a-z-]+: '[^']*' must be (>= -?[0-9.e+-]+|> -?[0-9.e+-]+|in \[[0-9.e+-]+, [0-9.e+-]+\])$)");
  int bounded = 0;
  CLI::App flags;
  TrainOptions defaults;
  add_train_flags(flags, defaults);
  for (const CLI::Option* option : flags.get_options()) {
    const std::string type = option->get_type_name();
    if (type.rfind("INT", 0) != 0 && type.rfind("FLOAT", 0) != 0 && type.rfind("UINT", 0) != 0) continue;
    for (const char* value : {"-1", "0", "2", "1e300"}) {
      CLI::App app;
      TrainOptions o;
      add_train_flags(app, o);
      require_representable_numbers(app);
      std::string said;
      try {
        app.parse(std::vector<std::string>{value, option->get_name()});
      } catch (const CLI::ParseError& e) {
        said = e.what();
      }
      CAPTURE(said);
      if (said.empty() || said.find("is not a") != std::string::npos || said.find("64 bits") != std::string::npos)
        continue;
      bounded += said.find(" must be ") != std::string::npos;
      CHECK(std::regex_match(said, bound));
    }
  }
  CHECK(bounded > 30);
  refused(run_train("--temperature -1"), "train: error: --temperature: '-1' must be >= 0\n");
  refused(run_train("--lr 0"), "train: error: --lr: '0' must be > 0\n");
  refused(run_train("--dropout 1"), "train: error: --dropout: '1' must be in [0, 0.99]\n");
  Run sample = test::run_command(std::string(FLEXTP_SAMPLE_BINARY) + " --load m.safetensors --temperature -1");
  CHECK(sample.status == 1);
  CHECK(sample.output.rfind("flextp-sample: error: --temperature: '-1' must be >= 0\n", 0) == 0);
  Run tokenize = test::run_command(std::string(FLEXTP_TOKENIZE_BINARY) + " --out o --shard-tokens 0");
  CHECK(tokenize.status == 1);
  CHECK(tokenize.output.rfind("flextp-tokenize: error: --shard-tokens: '0' must be in [1, 1073741824]\n", 0) == 0);
}

TEST_CASE("errors name the problem without the source line, unless --debug") {
  const std::string run = std::string(kTiny) + " --no-save --data /no/such/file --steps 1";
  Run plain = run_train(run);
  refused(plain, "cannot open data file /no/such/file");
  CHECK_FALSE(has(plain, "(at "));
  Run debug = run_train(run + " --debug");
  refused(debug, "cannot open data file /no/such/file");
  CHECK(has(debug, ".cpp:"));
}

// docs/flags.md's table of train's flags against the parser itself: every flag is listed, and every
// default the table states (a number, or one word such as a choice) is the parser's default.
#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "train/options.h"

using namespace flextp;

namespace {

// The lines of docs/flags.md's "Flags of `train`" table.
std::vector<std::string> flag_table_rows() {
  std::ifstream in(FLEXTP_SOURCE_DIR "/docs/flags.md");
  std::vector<std::string> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "# Flags of `train`") inside = true;
    else if (inside && !rows.empty() && line.rfind("|", 0) != 0) break;
    else if (inside && line.rfind("| `--", 0) == 0) rows.push_back(line);
  }
  return rows;
}

// A row's cells, split at the pipes that are not escaped (`a\|b` is one cell).
std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out{""};
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '|' && row[i - 1] != '\\') out.push_back("");
    else out.back() += row[i];
  }
  out.pop_back();  // after the closing pipe
  return out;
}

std::vector<std::string> flags_in(const std::string& text) {
  std::vector<std::string> out;
  static const std::regex flag("`(--[a-z0-9-]+)");
  for (std::sregex_iterator m(text.begin(), text.end(), flag), end; m != end; ++m) out.push_back((*m)[1]);
  return out;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" `"));
  s.erase(s.find_last_not_of(" `") + 1);
  return s;
}

}  // namespace

TEST_CASE("docs/flags.md's flag table lists every flag of train with the parser's defaults") {
  CLI::App app;
  app.option_defaults()->always_capture_default();
  TrainOptions o;
  add_train_flags(app, o);
  std::vector<std::string> rows = flag_table_rows();
  REQUIRE(rows.size() > 40);
  std::string table;
  for (const std::string& r : rows) table += r + "\n";
  std::vector<std::string> listed = flags_in(table);
  for (const CLI::Option* opt : app.get_options()) {
    std::string name = opt->get_name();
    if (name == "--help") continue;
    INFO(name);
    CHECK(std::find(listed.begin(), listed.end(), name) != listed.end());
  }
  static const std::regex number(R"(([-+0-9.e]+)( \(.*\))?)"), word("[a-z0-9]+");
  int compared = 0;
  for (const std::string& row : rows) {
    std::vector<std::string> c = cells(row);
    REQUIRE(c.size() == 3);
    // "`--lr X` / `--min-lr X` | 1e-3 / 1e-4": one default per flag, in order.
    std::vector<std::string> flags = flags_in(c[0]), defaults;
    std::istringstream parts(c[1]);
    for (std::string d; std::getline(parts, d, '/');) defaults.push_back(trim(d));
    if (defaults.size() != flags.size()) defaults.assign(flags.size(), trim(c[1]));
    for (size_t i = 0; i < flags.size(); ++i) {
      INFO(row);
      const CLI::Option* opt = app.get_option_no_throw(flags[i]);
      REQUIRE(opt != nullptr);  // a flag the table names that train does not have
      std::string parser = opt->get_default_str(), stated = defaults[i];
      if (parser == "[]") parser.clear();  // a repeatable flag's empty list: "none" in the table
      std::smatch m;
      if (std::regex_match(stated, m, number) && !parser.empty()) {
        CHECK(std::stod(m[1].str()) == std::stod(parser));
        ++compared;
      } else if (std::regex_match(stated, word) && !parser.empty()) {
        CHECK(stated == parser);
        ++compared;
      }
    }
  }
  CHECK(compared > 35);  // the rule above still reads most of the table (39 defaults)
}

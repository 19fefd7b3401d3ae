// docs/flags.md's tables of train's flags against the parser itself: every flag is listed, under
// the heading of its group in --help (the groups in --help's order), and every default a table
// states (a number, or one word such as a choice) is the parser's default.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "train/flags.h"

using namespace flextp;

namespace {

struct TableRow {
  std::string group;  // the "## " heading above it
  std::string text;
};

// The rows of docs/flags.md's tables of flags, from "# Flags of `train`" to the first heading
// after the tables.
std::vector<TableRow> flag_table_rows(std::vector<std::string>& groups) {
  std::ifstream in(FLEXTP_SOURCE_DIR "/docs/flags.md");
  std::vector<TableRow> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "# Flags of `train`") {
      inside = true;
    } else if (inside && line.rfind("## ", 0) == 0) {
      if (!groups.empty() && (rows.empty() || rows.back().group != groups.back())) break;  // a section of no flags
      groups.push_back(line.substr(3));
    } else if (inside && line.rfind("| `--", 0) == 0) {
      rows.push_back({groups.empty() ? "" : groups.back(), line});
    }
  }
  if (!groups.empty() && (rows.empty() || rows.back().group != groups.back())) groups.pop_back();
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

TEST_CASE("docs/flags.md's flag tables list every flag of train under its group, with the parser's defaults") {
  CLI::App app;
  TrainOptions o;
  add_train_flags(app, o);
  std::vector<std::string> headings;
  std::vector<TableRow> rows = flag_table_rows(headings);
  REQUIRE(rows.size() > 40);
  // The groups of --help, in its order; a heading names a group or the start of its name.
  std::vector<std::string> groups;
  for (const CLI::Option* opt : app.get_options())
    if (std::find(groups.begin(), groups.end(), opt->get_group()) == groups.end()) groups.push_back(opt->get_group());
  REQUIRE(headings.size() == groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    INFO(headings[i], " / ", groups[i]);
    CHECK(groups[i].rfind(headings[i], 0) == 0);
  }
  for (const CLI::Option* opt : app.get_options()) {
    std::string name = opt->get_name();
    INFO(name);
    const TableRow* listed = nullptr;
    for (const TableRow& row : rows) {
      std::vector<std::string> flags = flags_in(cells(row.text)[0]);
      if (std::find(flags.begin(), flags.end(), name) != flags.end()) listed = &row;
    }
    REQUIRE(listed != nullptr);
    CHECK(opt->get_group().rfind(listed->group, 0) == 0);
  }
  static const std::regex number(R"(([-+0-9.e]+)( \(.*\))?)"), word("[a-z0-9]+");
  int compared = 0;
  for (const TableRow& row : rows) {
    std::vector<std::string> c = cells(row.text);
    REQUIRE(c.size() == 3);
    // "`--lr X` / `--min-lr X` | 1e-3 / 1e-4": one default per flag, in order.
    std::vector<std::string> flags = flags_in(c[0]), defaults;
    std::istringstream parts(c[1]);
    for (std::string d; std::getline(parts, d, '/');) defaults.push_back(trim(d));
    if (defaults.size() != flags.size()) defaults.assign(flags.size(), trim(c[1]));
    for (size_t i = 0; i < flags.size(); ++i) {
      INFO(row.text);
      const CLI::Option* opt = app.get_option_no_throw(flags[i]);
      REQUIRE(opt != nullptr);  // a flag the table names that train does not have
      std::string parser = opt->get_default_str(), stated = defaults[i];
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
  CHECK(compared > 40);  // the rule above still reads most of the tables
}

TEST_CASE("train --help shows every flag's default") {
  CLI::App app;
  TrainOptions o;
  add_train_flags(app, o);
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_group() == "General") continue;  // --help, --version, --config, --debug
    INFO(opt->get_name());
    CHECK(!opt->get_default_str().empty());
  }
}

TEST_CASE("docs/flags.md's table of what a resumed run keeps is the declarations' (train/flags.cpp)") {
  CLI::App app;
  TrainOptions o;
  OptionTable table = add_train_flags(app, o);
  std::map<std::string, std::string> declared, documented;
  for (const DeclaredOption& d : table.options())
    if (d.resume != Resume::NotRecorded)
      declared[d.option->get_name()] = d.resume == Resume::MustMatch ? "must match" : "may change";
  std::ifstream in(FLEXTP_SOURCE_DIR "/docs/flags.md");
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## What a resumed run keeps";
    if (!inside || line.rfind("| `--", 0) != 0) continue;
    std::vector<std::string> c = cells(line);
    REQUIRE(c.size() == 2);
    documented[trim(c[0])] = trim(c[1]);
  }
  CHECK(declared.size() >= 16);
  CHECK(documented == declared);
}

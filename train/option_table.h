#pragma once
// Every flag of `train` is declared once (train/flags.cpp), and this table keeps what follows from
// its declaration beyond CLI11's parsing, --help and --config keys: its life (a run, model or
// optimizer setting), whether a checkpoint records it, and what a resumed run does with it.
//
// The one rule for resuming: a recorded option a resumed run does not give takes the checkpoint's
// value; one it gives is compared with it: an option that may change replaces it (the log says
// so), one that must match is refused when it differs. A checkpoint older than an option's record
// leaves it at the command line's value. Options not recorded are the run's own.
#include <CLI/CLI.hpp>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/text_fields.h"

namespace flextp {

enum class Life { Run, Model, Optimizer };
enum class Resume { NotRecorded, MayChange, MustMatch };

struct DeclaredOption {
  CLI::Option* option = nullptr;
  Life life = Life::Run;
  Resume resume = Resume::NotRecorded;
  // What a checkpoint records it as: a model option's GPTConfig field ("n_layer", nn/config.h), any
  // other's flag without its dashes ("weight-decay").
  std::string key;
  std::function<std::string()> text;             // its value as a checkpoint records it
  std::function<bool(const std::string&)> read;  // its value from that text; false: not one
};

// A declaration in the making: train/flags.cpp chains these after OptionTable::add.
class Declaration {
 public:
  Declaration(CLI::Option* option, DeclaredOption& declared) : option_(option), declared_(declared) {}
  Declaration& check(const CLI::Validator& v) { return option_->check(v), *this; }
  Declaration& shown_default(const std::string& text) { return option_->default_str(text), *this; }
  Declaration& delimiter(char c) { return option_->delimiter(c), *this; }
  // Sets field `field` of the model's GPTConfig: recorded with the model config when the field is
  // saved (nn/config.h), and then a resumed run must match it.
  Declaration& model(const std::string& field);
  Declaration& optimizer(Resume resume) { return declared_.life = Life::Optimizer, recorded(resume); }
  Declaration& recorded(Resume resume);

 private:
  CLI::Option* option_;
  DeclaredOption& declared_;
};

class OptionTable {
 public:
  explicit OptionTable(CLI::App& app) : app_(&app) {}

  // --help's group of the options declared next.
  void group(const std::string& name) { group_ = name; }
  // An option bound to `value` (int64_t, uint64_t, double, std::string or a vector of those).
  template <typename T>
  Declaration add(const std::string& flag, T& value, const std::string& help);
  // A flag without a value (a "!" in front inverts it, as in CLI11).
  Declaration flag(const std::string& flag, bool& value, const std::string& help);
  // A number that `parse` reads (nothing: refused, `rule` saying what it must be), for values
  // CLI11's number checks refuse (--lambda inf).
  Declaration parsed(const std::string& flag, double& value, std::function<std::optional<double>(const std::string&)> parse,
                     const std::string& rule, const std::string& help);

  const std::deque<DeclaredOption>& options() const { return options_; }
  CLI::App& app() const { return *app_; }

 private:
  Declaration declare(CLI::Option* option, std::function<std::string()> text,
                      std::function<bool(const std::string&)> read);

  CLI::App* app_;
  std::string group_ = "General";
  std::deque<DeclaredOption> options_;  // a deque: declarations keep their addresses
};

// A value as a checkpoint records it, and back: core/text_fields.h's value_text and
// value_from_text, and a list as its values comma-separated.
template <typename T>
std::string option_text(const T& v) {
  return value_text(v);
}
template <typename T>
std::string option_text(const std::vector<T>& v) {
  std::string out;
  for (const T& e : v) out += (out.empty() ? "" : ",") + value_text(e);
  return out;
}
template <typename T>
bool option_from_text(const std::string& s, T& v) {
  return value_from_text(s, v);
}
template <typename T>
bool option_from_text(const std::string& s, std::vector<T>& v) {
  v.clear();
  for (const std::string& part : CLI::detail::split(s, ','))
    if (!part.empty() && !value_from_text(part, v.emplace_back())) return false;
  return true;
}

template <typename T>
Declaration OptionTable::add(const std::string& flag, T& value, const std::string& help) {
  return declare(app_->add_option(flag, value, help), [&value] { return option_text(value); },
                 [&value](const std::string& s) { return option_from_text(s, value); });
}

// The values a checkpoint records of this run's options (for TrainState::extra): every recorded
// option but the model's, which the model config records.
std::map<std::string, std::string> recorded_options(const OptionTable& table);

// Applies the rule above to a resumed run's options. `records`: what the checkpoint `from` records
// (its model config's saved fields and its recorded options); `given(flag)`: whether the command line
// or a --config file gave the flag. Returns the log's lines for the options the run changed;
// throws for one that must match and differs.
std::string resume_options(const OptionTable& table, const std::map<std::string, std::string>& records,
                           const std::string& from, const std::function<bool(const std::string&)>& given);

// `message` with every recorded key of a model option (a GPTConfig field, as a whole word)
// replaced by its flag: "n_embd 10 is not divisible by n_head 4" -> "--n-embd 10 ... --n-head 4".
std::string with_flag_names(const OptionTable& table, std::string message);

}  // namespace flextp

#include "train/option_table.h"

#include <cctype>

#include "core/error.h"
#include "nn/config.h"

namespace flextp {

namespace {

// Whether GPTConfig's field `name` is one checkpoints record (nn/config.h).
bool saved_field(const std::string& name) {
  bool saved = false, known = false;
  GPTConfig c;
  for_each_field(c, [&](const ConfigField& f, const auto&) {
    if (f.name == name) known = true, saved = f.saved;
  });
  FLEXTP_CHECK(known, "no GPTConfig field is named '", name, "' (nn/config.h, for_each_field)");
  return saved;
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

Declaration& Declaration::model(const std::string& field) {
  declared_.life = Life::Model;
  declared_.key = field;
  return saved_field(field) ? recorded(Resume::MustMatch) : *this;
}

Declaration& Declaration::recorded(Resume resume) {
  declared_.resume = resume;
  option_->description(option_->get_description() +
                       (resume == Resume::MustMatch ? " [a resumed run keeps its checkpoint's; another is refused]"
                                                    : " [a resumed run keeps its checkpoint's unless given]"));
  return *this;
}

Declaration OptionTable::declare(CLI::Option* option, std::function<std::string()> text,
                                 std::function<bool(const std::string&)> read) {
  option->group(group_);
  DeclaredOption& d = options_.emplace_back();
  d.option = option, d.text = std::move(text), d.read = std::move(read);
  d.key = option->get_name().substr(2);
  return Declaration(option, d);
}

Declaration OptionTable::flag(const std::string& flag, bool& value, const std::string& help) {
  return declare(app_->add_flag(flag, value, help)->default_str("off"), [&value] { return value ? "1" : "0"; },
                 [&value](const std::string& s) {
                   if (s != "0" && s != "1") return false;
                   value = s == "1";
                   return true;
                 });
}

Declaration OptionTable::parsed(const std::string& flag, double& value,
                                std::function<std::optional<double>(const std::string&)> parse, const std::string& rule,
                                const std::string& help) {
  auto read = [&value, parse](const std::string& s) {
    std::optional<double> v = parse(s);
    if (v) value = *v;
    return v.has_value();
  };
  CLI::Option* option = app_->add_option_function<std::string>(flag, read, help);
  option->check(CLI::Validator(
      [parse, rule](std::string& s) { return parse(s) ? std::string() : "'" + s + "' must be " + rule; }, rule));
  option->default_str(option_text(value));
  return declare(option, [&value] { return option_text(value); }, read);
}

std::map<std::string, std::string> recorded_options(const OptionTable& table) {
  std::map<std::string, std::string> out;
  for (const DeclaredOption& d : table.options())
    if (d.resume != Resume::NotRecorded && d.life != Life::Model) out[d.key] = d.text();
  return out;
}

std::string resume_options(const OptionTable& table, const std::map<std::string, std::string>& records,
                           const std::string& from, const std::function<bool(const std::string&)>& given) {
  std::string said;
  for (const DeclaredOption& d : table.options()) {
    auto record = records.find(d.key);
    if (d.resume == Resume::NotRecorded || record == records.end()) continue;
    const std::string flag = d.option->get_name(), value = d.text();
    if (!given(flag)) {
      FLEXTP_CHECK(d.read(record->second), from, ": its record of ", flag, ", '", record->second,
                   "', is not a value of ", flag);
    } else if (value != record->second && d.resume == Resume::MustMatch) {
      FLEXTP_FAIL(flag, " ", value, " differs from the ", record->second, " of checkpoint ", from,
                  ": a resumed run keeps it; leave ", flag, " out");
    } else if (value != record->second) {
      said += flag + " " + value + " replaces the checkpoint's " + record->second + "\n";
    }
  }
  return said;
}

std::string with_flag_names(const OptionTable& table, std::string message) {
  for (const DeclaredOption& d : table.options()) {
    if (d.life != Life::Model) continue;
    const std::string& name = d.key;
    const std::string flag = d.option->get_name();
    for (size_t at = message.find(name); at != std::string::npos; at = message.find(name, at)) {
      size_t end = at + name.size();
      if ((at == 0 || !word_char(message[at - 1])) && (end == message.size() || !word_char(message[end]))) {
        message.replace(at, name.size(), flag);
        end = at + flag.size();
      }
      at = end;
    }
  }
  return message;
}

}  // namespace flextp

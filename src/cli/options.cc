#include "cli/options.h"

#include <limits>
#include <utility>

#include "core/byte_size.h"
#include "core/input_file.h"
#include "core/output_file.h"
#include "core/parse_number.h"

namespace tessera::cli {
namespace {

// A CLI11 validator from a core parser: "" when the text is allowed, else the reason.
template <typename Parse>
CLI::Validator Rule(std::string description, Parse parse) {
  CLI::Validator v(
      [parse](std::string& text) -> std::string {
        auto r = parse(text);
        return r.ok() ? std::string() : r.status().message();
      },
      std::move(description), kNumberRule);
  return v;
}

}  // namespace

CLI::Validator Integer(int64_t lo, int64_t hi) {
  // CLI11 converts with strtoll base 0 (010 = 8, 0x10 = 16): hand it the canonical decimal.
  CLI::Validator v(
      [lo, hi](std::string& text) -> std::string {
        auto r = core::ParseInteger(text, lo, hi);
        if (!r.ok()) return r.status().message();
        text = std::to_string(*r);
        return std::string();
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", kNumberRule);
  return v;
}

CLI::Validator Number(double lo, double hi) {
  return Rule("", [lo, hi](const std::string& t) { return core::ParseNumber(t, lo, hi); });
}

CLI::Validator PositiveNumber(double hi) {
  return Rule("", [hi](const std::string& t) { return core::ParseNumber(t, 0, hi, true); });
}

CLI::Validator Seed() { return Integer(0, std::numeric_limits<int64_t>::max()); }

CLI::Validator ByteSize(int64_t lo, int64_t hi) {
  CLI::Validator v(
      [lo, hi](std::string& text) -> std::string {
        auto r = core::ParseByteSize(text, lo, hi);
        if (!r.ok()) return r.status().message();
        text = std::to_string(*r);
        return std::string();
      },
      "SIZE", kNumberRule);
  return v;
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    out.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

CLI::Validator ListRule(std::optional<CLI::Validator> element) {
  CLI::Validator v(
      [element](std::string& text) -> std::string {
        if (text.empty()) return "got an empty value; give a value or leave the option out";
        const std::string shown = text.size() > 60 ? text.substr(0, 60) + "..." : text;
        std::vector<std::string> parts = SplitList(text);
        std::string joined;
        for (size_t i = 0; i < parts.size(); ++i) {
          if (parts[i].empty()) {
            return "got '" + shown + "': element " + std::to_string(i + 1) +
                   " is empty; separate the values with single commas";
          }
          if (element) {
            const std::string why = (*element)(parts[i]);
            if (!why.empty()) {
              return why + " (element " + std::to_string(i + 1) + " of '" + shown + "')";
            }
          }
          if (i > 0) joined += ',';
          joined += parts[i];
        }
        text = joined;
        return std::string();
      },
      "", kNonEmptyRule);
  // An element rule on numbers makes this a number rule (options_test finds it).
  if (element && !element->get_name().empty()) v.name(element->get_name());
  return v;
}

CLI::Option* AllowEmpty(CLI::Option* opt) {
  CLI::Validator marker([](std::string&) { return std::string(); }, "", kEmptyAllowedRule);
  return opt->check(marker);
}

namespace {

bool HasValidator(CLI::Option* opt, const char* name) {
  try {
    return opt->get_validator(name) != nullptr;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

}  // namespace

void RefuseEmptyValues(CLI::App* app) {
  for (CLI::Option* opt : app->get_options()) {
    if (opt->get_type_size_max() == 0 || opt->get_expected_max() == 0) continue;  // a flag
    if (HasValidator(opt, kEmptyAllowedRule) || HasValidator(opt, kNonEmptyRule)) continue;
    CLI::Validator non_empty(
        [](std::string& text) -> std::string {
          return text.empty() ? "got an empty value; give a value or leave the option out"
                              : std::string();
        },
        "", kNonEmptyRule);
    opt->check(non_empty);
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    RefuseEmptyValues(sub);
  }
}

CLI::Option* CommandPaths::Input(CLI::App* app, const std::string& name, std::string* path,
                                 const std::string& help) {
  RecordInput(name, path);
  CLI::Validator marker([](std::string&) { return std::string(); }, "", kInputRule);
  return app->add_option(name, *path, help)->check(marker);
}

CLI::Option* CommandPaths::Output(CLI::App* app, const std::string& name, std::string* path,
                                  const std::string& help) {
  RecordOutput(name, path);
  CLI::Validator non_empty(
      [](std::string& text) -> std::string {
        return text.empty() ? "empty path; give a file name" : std::string();
      },
      "", kOutputRule);
  return app->add_option(name, *path, help)->check(non_empty);
}

CLI::Option* CommandPaths::OutputFolder(CLI::App* app, const std::string& name, std::string* path,
                                        const std::string& help) {
  CLI::Validator non_empty(
      [](std::string& text) -> std::string {
        return text.empty() ? "empty path; give a folder name" : std::string();
      },
      "", kOutputRule);
  return app->add_option(name, *path, help)->check(non_empty);
}

void CommandPaths::RecordInput(const std::string& name, const std::string* path) {
  inputs_.push_back({name, path});
}

void CommandPaths::RecordOutput(const std::string& name, const std::string* path) {
  outputs_.push_back({name, path});
}

core::Status CommandPaths::Check() const {
  core::OutputPaths paths;
  for (const Entry& e : inputs_) {
    if (core::PathExists(*e.path)) paths.Input(e.name, *e.path);
  }
  for (const Entry& e : outputs_) paths.Output(e.name, *e.path);
  return paths.Check();
}

Action Checked(std::shared_ptr<const CommandPaths> paths, Action action) {
  return [paths = std::move(paths), action = std::move(action)]() -> core::Status {
    RETURN_IF_ERROR(paths->Check());
    return action();
  };
}

std::string NameFlags(std::string message, std::initializer_list<FieldFlag> names) {
  for (const FieldFlag& n : names) {
    if (message.size() > n.field.size() && message.compare(0, n.field.size(), n.field) == 0 &&
        message[n.field.size()] == ':') {
      return std::string(n.flag) + message.substr(n.field.size());
    }
  }
  return message;
}

core::Status NameFlags(const core::Status& s, std::initializer_list<FieldFlag> names) {
  if (s.ok()) return s;
  return core::Status(s.code(), NameFlags(s.message(), names));
}

}  // namespace tessera::cli

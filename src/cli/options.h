// Option rules every tessera command shares, applied when the command line is parsed, before
// any work, so a bad value is one line naming the option, the value and what is allowed:
//
//   Integer(lo, hi)      decimal integer in [lo, hi] (core::ParseInteger): `010` is ten,
//                        `-1` for a seed is refused instead of wrapping to 2^64 - 1;
//   Number(lo, hi)       finite number in [lo, hi]; PositiveNumber(hi): in (0, hi];
//   Seed()               Integer(0, 2^63 - 1);
//   ByteSize(lo, hi)     a size with an optional unit (core::ParseByteSize: 512MiB, 80GB,
//                        4096) in [lo, hi] bytes, handed to CLI11 as decimal bytes.
// Attach Integer, Seed and ByteSize with ->transform() (they hand CLI11 the canonical decimal,
// since CLI11 itself reads `010` as octal), Number rules with ->check(). Each validator is named
// kNumberRule, so a test can walk a command tree and find any
// numeric option that has none (cli_test does, for every subcommand).
//
// Files: CommandPaths records which options name files a command reads (Input, or
// PresetOrInput for "a preset name or a file") and writes (Output). Checked(paths, action)
// runs core::OutputPaths::Check before the action: an output may not be an input of the same
// command (same inode or resolved path), two outputs may not share a file, and every output
// must be writable now (not a directory, directory exists and is writable) — so `--json`
// onto an input and an unwritable `--out` are refused before minutes of work.
//
// Empty values: RefuseEmptyValues (run once over the whole tree, after every command is added)
// gives every option that takes a value a check refusing an explicitly empty one ("--cluster:
// got an empty value; give a value or leave the option out"): an option left out means its
// default, one given as '' is a mistake (an unset shell variable), never the default in
// disguise. An option whose empty value means something (an empty diffusion prompt) is marked
// AllowEmpty. Lists: ListOption reads comma-separated values and refuses an empty element
// ("--mixes v50,,v60", "v50,"), which CLI11's own delimiter drops without a word.
//
// Flag names: library messages name a field ("ranks: got 9, must be in [2, 8] for a6000x8"),
// since the library also serves the Python binding and the servers. NameFlags gives a
// command line's message the flag the value came from: a leading "<field>:" becomes
// "<flag>:" ("--ranks: got 9, ...").
//
// Errors found while parsing (CLI11 ParseError) are printed by main() as one line.
// Thread-safety: used while building and parsing the command line, on one thread.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "core/status.h"

namespace tessera::cli {

inline constexpr const char* kNumberRule = "tessera-number";
inline constexpr const char* kOutputRule = "tessera-output";
// Marks an option recorded by CommandPaths::Input (accepts every value).
inline constexpr const char* kInputRule = "tessera-input";
// RefuseEmptyValues' check, and AllowEmpty's marker.
inline constexpr const char* kNonEmptyRule = "tessera-non-empty";
inline constexpr const char* kEmptyAllowedRule = "tessera-empty-allowed";

// Upper bounds shared by the commands that start MPI jobs.
inline constexpr int64_t kMaxRanks = 4096;
inline constexpr double kMaxOpTimeoutS = 1e6;

CLI::Validator Integer(int64_t lo, int64_t hi);
CLI::Validator Number(double lo, double hi);
CLI::Validator PositiveNumber(double hi);
CLI::Validator Seed();
CLI::Validator ByteSize(int64_t lo, int64_t hi);

// Marks `opt` as one whose explicitly empty value means something; returns it.
CLI::Option* AllowEmpty(CLI::Option* opt);
// Adds the kNonEmptyRule check to every option of `app` and its subcommands, at any depth,
// that takes a value and is not marked AllowEmpty (flags take none).
void RefuseEmptyValues(CLI::App* app);

// The check behind ListOption, on one value as typed: '' and an empty element are refused
// ("got 'v50,,v60': element 2 is empty; ..."); each element must pass `element` (which may
// rewrite it, like Integer; "got '0', must be ... (element 2 of '8,0,16')"); the value becomes
// the elements joined by ','.
CLI::Validator ListRule(std::optional<CLI::Validator> element);
// The elements of a value that passed ListRule.
std::vector<std::string> SplitList(const std::string& text);

// A comma-separated list option bound to `out`: `--mixes v35,v50` or `--mixes v35 --mixes v50`
// (the first value given replaces the default; more values append). Each value is checked by
// ListRule(element) before any action. The help shows *out as the default when non-empty.
template <typename T>
CLI::Option* ListOption(CLI::App* app, const std::string& name, std::vector<T>* out,
                        const std::string& help, std::optional<CLI::Validator> element = {}) {
  std::string shown;
  for (const T& v : *out) {
    if (!shown.empty()) shown += ',';
    shown += CLI::detail::to_string(v);
  }
  CLI::Option* opt = app->add_option_function<std::vector<std::string>>(
      name,
      [out, name](const std::vector<std::string>& values) {
        out->clear();
        for (const std::string& value : values) {
          for (const std::string& e : SplitList(value)) {
            T v{};
            // ListRule has checked (and canonicalised) every element.
            if (!CLI::detail::lexical_cast(e, v)) throw CLI::ConversionError(name, e);
            out->push_back(v);
          }
        }
      },
      help);
  opt->transform(ListRule(std::move(element)));  // a transform: it canonicalises elements
  if (!shown.empty()) opt->default_str("[" + shown + "]");
  opt->type_name(CLI::detail::type_name<T>());  // "INT ...", not the raw "TEXT ..."
  return opt;
}

class CommandPaths {
 public:
  // Adds a file option and records it. The string must outlive parsing and the action.
  CLI::Option* Input(CLI::App* app, const std::string& name, std::string* path,
                     const std::string& help);
  CLI::Option* Output(CLI::App* app, const std::string& name, std::string* path,
                      const std::string& help);
  // A folder the command writes files into (`tarot scenes --out`): marked as an output
  // (kOutputRule, refusing an empty name) but not checked as a file; the command checks it.
  CLI::Option* OutputFolder(CLI::App* app, const std::string& name, std::string* path,
                            const std::string& help);
  // Records options added elsewhere (e.g. --cluster, which may be a preset name: only an
  // existing file counts as an input).
  void RecordInput(const std::string& name, const std::string* path);
  void RecordOutput(const std::string& name, const std::string* path);
  // core::OutputPaths over the values parsed.
  core::Status Check() const;

 private:
  struct Entry {
    std::string name;
    const std::string* path;
  };
  std::vector<Entry> inputs_;
  std::vector<Entry> outputs_;
};

// `action` preceded by paths->Check().
Action Checked(std::shared_ptr<const CommandPaths> paths, Action action);

// A library field and the flag that sets it, e.g. {"ranks", "--ranks"}.
struct FieldFlag {
  std::string_view field;
  std::string_view flag;
};

// `message` with a leading "<field>:" of the first matching pair replaced by "<flag>:";
// unchanged when no field leads it.
std::string NameFlags(std::string message, std::initializer_list<FieldFlag> names);
// The same for a status's message (same code); OK stays OK.
core::Status NameFlags(const core::Status& s, std::initializer_list<FieldFlag> names);
template <typename T>
core::StatusOr<T> NameFlags(core::StatusOr<T> r, std::initializer_list<FieldFlag> names) {
  if (r.ok()) return r;
  return NameFlags(r.status(), names);
}

}  // namespace tessera::cli

// Registry<Interface, Extra...>: named implementations of an interface (planners,
// collectives, ...) in registration order, each with a description, a factory and the option
// keys it reads. Adding an implementation is one file (the class, its factory, its entry)
// plus one line where the registry is built.
//
//   struct Traits { bool in_all = true; };                 // optional extra fields
//   using Entry = core::RegistryEntry<Planner, Traits>;    // has name, ..., in_all
//   core::Registry<Planner, Traits> r("planner");
//   r.Add({{.in_all = false}, "usp", "Ulysses x ring", &NewUsp, {{"usp.x", "..."}}});
//   ASSIGN_OR_RETURN(const Entry* e, r.Find("usp"));     // NotFound lists the names
//   RETURN_IF_ERROR(r.ValidateOptions(*e, options));      // unknown key -> InvalidArgument
//
// An entry inherits every Extra type (aggregate bases, so its fields read as the entry's
// own: `entry.in_all`); aggregate initialisation lists the Extra values first. Option values
// are strings; each implementation parses and range-checks its own values.
// Messages: Find "planner: got 'x', must be one of a, b, c" (plus " or all" for names the
// caller accepts itself, see `also_accepted`); ValidateOptions "planner 'usp': got option
// 'usp.y', must be one of usp.x" (or "..., takes no options").
// Add CHECK-fails on a malformed table (empty or duplicate name, no factory, duplicate key):
// tables are code. Entry pointers stay valid until the next Add. Build a registry once (e.g.
// a function-local static) and it is thread-safe to read.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/status.h"

namespace tessera::core {

// A declared option: "knapformer.bags", "bag spec g{G}n{N}+... (default: halving)".
struct OptionKey {
  std::string key;
  std::string description;
};

// key -> value, as given on a command line (--option key=value).
using RegistryOptions = std::map<std::string, std::string>;

template <typename Interface, typename... Extra>
struct RegistryEntry : Extra... {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<Interface>()> make;
  std::vector<OptionKey> options;

  bool DeclaresOption(std::string_view key) const {
    for (const OptionKey& o : options)
      if (o.key == key) return true;
    return false;
  }
};

template <typename Interface, typename... Extra>
class Registry {
 public:
  using Entry = RegistryEntry<Interface, Extra...>;

  // `kind` names what is registered ("planner"); `also_accepted` are names the caller
  // handles itself (e.g. "all"), listed after the entries in Find's message.
  explicit Registry(std::string kind, std::vector<std::string> also_accepted = {})
      : kind_(std::move(kind)), also_accepted_(std::move(also_accepted)) {}

  Registry& Add(Entry entry) {
    CHECK(!entry.name.empty()) << kind_ << " registry: an entry has an empty name";
    CHECK(FindOrNull(entry.name) == nullptr)
        << kind_ << " registry: '" << entry.name << "' registered twice";
    CHECK(entry.make != nullptr) << kind_ << " registry: '" << entry.name << "' has no factory";
    for (size_t i = 0; i < entry.options.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        CHECK(entry.options[i].key != entry.options[j].key)
            << kind_ << " registry: '" << entry.name << "' declares option '"
            << entry.options[i].key << "' twice";
    entries_.push_back(std::move(entry));
    return *this;
  }

  const std::string& kind() const { return kind_; }
  // In registration order.
  const std::vector<Entry>& entries() const { return entries_; }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const Entry& e : entries_) names.push_back(e.name);
    return names;
  }

  const Entry* FindOrNull(std::string_view name) const {
    for (const Entry& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }

  // The entry called `name`, or NotFound "<kind>: got 'x', must be one of a, b, c".
  StatusOr<const Entry*> Find(std::string_view name) const {
    if (const Entry* e = FindOrNull(name)) return e;
    std::string choices = Join(Names());
    if (!also_accepted_.empty()) {
      choices += (choices.empty() ? "" : " or ") + Join(also_accepted_, " or ");
    }
    if (choices.empty()) choices = "(none registered)";
    return NotFound(kind_ + ": got '" + std::string(name) + "', must be one of " + choices);
  }

  // InvalidArgument naming the first key (in key order) that `entry` does not declare.
  Status ValidateOptions(const Entry& entry, const RegistryOptions& options) const {
    for (const auto& [key, value] : options) {
      if (entry.DeclaresOption(key)) continue;
      std::vector<std::string> keys;
      for (const OptionKey& o : entry.options) keys.push_back(o.key);
      return InvalidArgument(kind_ + " '" + entry.name + "': got option '" + key + "', " +
                             (keys.empty() ? "takes no options" : "must be one of " + Join(keys)));
    }
    return Status::Ok();
  }

  // For an option map shared by several entries (e.g. one command running every planner):
  // InvalidArgument naming the first key that no entry declares, listing every known key.
  Status ValidateOptionsForAny(const RegistryOptions& options) const {
    for (const auto& [key, value] : options) {
      bool known = false;
      for (const Entry& e : entries_) known = known || e.DeclaresOption(key);
      if (known) continue;
      std::vector<std::string> keys;
      for (const Entry& e : entries_)
        for (const OptionKey& o : e.options)
          if (std::find(keys.begin(), keys.end(), o.key) == keys.end()) keys.push_back(o.key);
      return InvalidArgument(
          kind_ + " options: got '" + key + "', " +
          (keys.empty() ? "no " + kind_ + " takes options" : "must be one of " + Join(keys)));
    }
    return Status::Ok();
  }

 private:
  static std::string Join(const std::vector<std::string>& parts, const char* sep = ", ") {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
    return out;
  }

  std::string kind_;
  std::vector<std::string> also_accepted_;
  std::vector<Entry> entries_;
};

}  // namespace tessera::core

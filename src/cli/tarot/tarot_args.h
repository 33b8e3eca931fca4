// Options the `tessera tarot` subcommands share: the backends by registry name with their
// key=value options, and the mapping from library field names to flags for messages.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "tarot/bench.h"

namespace tessera::cli {

struct TarotBackendArgs {
  std::string segmenter = "synthetic", reasoner = "rule", features = "handcrafted";
  std::vector<std::string> segmenter_options, reasoner_options, features_options;
};

// Adds --segmenter, --reasoner, --features and their repeated --*-option KEY=VALUE flags.
void AddTarotBackendOptions(CLI::App* c, TarotBackendArgs* a);
// The backends as the library takes them (InvalidArgument naming a malformed KEY=VALUE).
core::StatusOr<tarot::BackendChoice> ToBackendChoice(const TarotBackendArgs& a);

// `s` with a leading library field ("tarot.query: ...") named by its flag ("--query: ...").
core::Status TarotFlags(const core::Status& s);
template <typename T>
core::StatusOr<T> TarotFlags(core::StatusOr<T> r) {
  if (r.ok()) return r;
  return TarotFlags(r.status());
}

}  // namespace tessera::cli

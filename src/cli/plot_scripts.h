// The plot scripts (scripts/plot_*.py that commands run themselves, e.g. `zellige plan
// --plot`) compiled into the binary at build time by cmake/embed_files.cmake, so a command
// can draw from any directory. Immutable; thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace tessera::cli {

struct EmbeddedFile {
  const char* path;       // the script's file name, e.g. "plot_zellige_plan.py"
  std::string_view text;  // its bytes
};

// Every embedded script, sorted by name.
std::span<const EmbeddedFile> EmbeddedPlotScripts();

}  // namespace tessera::cli

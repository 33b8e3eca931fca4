// The hardware data files (data/hw/**.json) compiled into the binary as a fallback, so that
// tessera finds its presets from any directory. The definition is generated at build time by
// cmake/embed_files.cmake (embedded_data.cc in the build tree). Immutable; thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace tessera::hw {

struct EmbeddedFile {
  const char* path;       // relative to the data root, e.g. "hw/clusters/a800x16.json"
  std::string_view text;  // the file's bytes
};

// Every embedded file, sorted by path.
std::span<const EmbeddedFile> EmbeddedDataFiles();

}  // namespace tessera::hw

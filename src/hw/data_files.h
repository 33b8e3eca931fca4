// Where tessera's versioned data files (hardware presets: data/hw/devices/<name>.json,
// data/hw/clusters/<name>.json; model shapes: data/models/<name>.json) are read from. A data file
// is looked up by its path relative to a data root ("hw/clusters/a800x16.json") in these roots,
// first hit wins:
//   1. $TESSERA_DATA_DIR (a checkout's data/ folder, or a copy of share/tessera);
//   2. the install dir next to the executable: <exe dir>/../share/tessera (the CMake install
//      rule puts data/hw and data/models there);
//   3. the copy embedded in the binary at build time (embedded_data.h).
// A file found in a root is used even if it is malformed (the error names it); a later root
// is tried only when the file is absent. DataFile::origin says which root served the file.
// Each data file carries "kind" (what it describes), an integer schema "version", and
// "provenance"; CheckDataFileHeader validates them.
// Free functions; thread-safe as long as the environment is not modified concurrently.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::hw {

// A directory searched for data files, with the label used in origins.
struct DataRoot {
  std::string dir;    // absolute or relative directory holding "hw/..."
  std::string label;  // "$TESSERA_DATA_DIR" or "install dir"
};

struct DataFile {
  std::string rel_path;  // "hw/clusters/a800x16.json"
  // Which copy was read: "$TESSERA_DATA_DIR: <path>", "install dir: <path>" or
  // "embedded: <rel_path>".
  std::string origin;
  std::string text;  // the file's contents
};

// Environment variable naming the first data root.
inline constexpr const char* kDataDirEnv = "TESSERA_DATA_DIR";

// Roots 1 and 2 above, those that are set and exist (the embedded copy is always last).
std::vector<DataRoot> DefaultDataRoots();

// Finds `rel_path` in `roots`, then in the embedded copy. NotFound lists where it looked.
core::StatusOr<DataFile> FindDataFile(const std::string& rel_path,
                                      const std::vector<DataRoot>& roots);
// FindDataFile over DefaultDataRoots().
core::StatusOr<DataFile> FindDataFile(const std::string& rel_path);

// Stems of the "*.json" files directly in `rel_dir` ("hw/clusters") over `roots` and the
// embedded copy, without duplicates, in natural order (a800x8 before a800x16 before a6000x32).
std::vector<std::string> ListDataFiles(const std::string& rel_dir,
                                       const std::vector<DataRoot>& roots);
std::vector<std::string> ListDataFiles(const std::string& rel_dir);

// Natural order: digit runs compare as numbers, the rest byte-wise.
bool NaturalLess(const std::string& a, const std::string& b);

// A preset name usable as a file stem: non-empty, [A-Za-z0-9._-] only, not starting with '.'.
bool IsPresetName(const std::string& name);

// A parsed data file whose header passed CheckDataFileHeader.
struct LoadedDataFile {
  core::Json json;
  std::string origin;  // DataFile::origin
};
// Finds "<rel_dir>/<name>.json" (e.g. "hw/clusters", "a800x16"), parses it and checks its header
// (required). NotFound when `name` is not a preset name or no root has the file; other errors
// are prefixed with the file's origin, e.g. `embedded: hw/clusters/x.json: kind: ...`.
core::StatusOr<LoadedDataFile> LoadDataFile(const std::string& rel_dir, const std::string& name,
                                            const std::string& kind, int max_version);

// Validates the header of a data file: "kind" must equal `kind`, "version" must be an integer
// in [1, max_version], "provenance" a non-empty string, "sources" (optional) an array of
// strings. With required = false (user files written before versioning), absent "kind",
// "version" and "provenance" are accepted; present ones are still checked. Messages name the
// field, e.g. `version: got 7, this build reads cluster files of version 1 (upgrade tessera
// or rewrite the file)`; callers prefix the file.
core::Status CheckDataFileHeader(const core::Json& j, const std::string& kind, int max_version,
                                 bool required);

}  // namespace tessera::hw

#include "hw/data_files.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string_view>

#include "hw/embedded_data.h"

#ifndef TESSERA_DATA_DIR_FROM_BIN
#define TESSERA_DATA_DIR_FROM_BIN "../share/tessera"
#endif

namespace tessera::hw {

using core::Json;
using core::Status;
using core::StatusOr;

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kEmbeddedLabel = "embedded";

// The running executable's directory, or empty if /proc/self/exe cannot be read.
fs::path ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return exe.parent_path();
}

bool ReadFile(const fs::path& p, std::string* text) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  return static_cast<bool>(in) || in.eof();
}

}  // namespace

std::vector<DataRoot> DefaultDataRoots() {
  std::vector<DataRoot> roots;
  std::error_code ec;
  if (const char* env = std::getenv(kDataDirEnv); env != nullptr && *env != '\0') {
    if (fs::is_directory(env, ec)) roots.push_back({env, std::string("$") + kDataDirEnv});
  }
  fs::path exe_dir = ExecutableDir();
  if (!exe_dir.empty()) {
    fs::path installed = (exe_dir / TESSERA_DATA_DIR_FROM_BIN).lexically_normal();
    if (fs::is_directory(installed, ec)) roots.push_back({installed.string(), "install dir"});
  }
  return roots;
}

StatusOr<DataFile> FindDataFile(const std::string& rel_path, const std::vector<DataRoot>& roots) {
  std::string looked;
  for (const DataRoot& root : roots) {
    const fs::path p = fs::path(root.dir) / rel_path;
    looked += p.string() + " (" + root.label + "), ";
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    DataFile f{rel_path, root.label + ": " + p.string(), ""};
    if (!ReadFile(p, &f.text)) return core::NotFound(p.string() + ": cannot read file");
    return f;
  }
  for (const EmbeddedFile& e : EmbeddedDataFiles()) {
    if (rel_path == e.path) {
      return DataFile{rel_path, std::string(kEmbeddedLabel) + ": " + rel_path, std::string(e.text)};
    }
  }
  return core::NotFound(rel_path + ": no such data file (looked in " + looked +
                        "and the embedded copy)");
}

StatusOr<DataFile> FindDataFile(const std::string& rel_path) {
  return FindDataFile(rel_path, DefaultDataRoots());
}

bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // Compare the digit runs as numbers: strip leading zeros, then length, then bytes.
      size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      int c = a.compare(is, ie - is, b, js, je - js);
      if (c != 0) return c < 0;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if (i < a.size() || j < b.size()) return a.size() - i < b.size() - j;
  return a < b;  // equal up to leading zeros: fall back to a total order
}

std::vector<std::string> ListDataFiles(const std::string& rel_dir,
                                       const std::vector<DataRoot>& roots) {
  std::set<std::string> stems;
  for (const DataRoot& root : roots) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(root.dir) / rel_dir, ec)) {
      if (entry.path().extension() == ".json") stems.insert(entry.path().stem().string());
    }
  }
  const std::string prefix = rel_dir + "/";
  for (const EmbeddedFile& e : EmbeddedDataFiles()) {
    std::string_view p = e.path;
    if (p.substr(0, prefix.size()) != prefix) continue;
    std::string_view rest = p.substr(prefix.size());
    if (rest.find('/') != std::string_view::npos || !rest.ends_with(".json")) continue;
    stems.insert(std::string(rest.substr(0, rest.size() - 5)));
  }
  std::vector<std::string> out(stems.begin(), stems.end());
  std::sort(out.begin(), out.end(), NaturalLess);
  return out;
}

std::vector<std::string> ListDataFiles(const std::string& rel_dir) {
  return ListDataFiles(rel_dir, DefaultDataRoots());
}

bool IsPresetName(const std::string& name) {
  if (name.empty() || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
  });
}

StatusOr<LoadedDataFile> LoadDataFile(const std::string& rel_dir, const std::string& name,
                                      const std::string& kind, int max_version) {
  if (!IsPresetName(name)) {
    return core::NotFound(kind + ": got '" + name + "', not a preset name ([A-Za-z0-9._-])");
  }
  ASSIGN_OR_RETURN(DataFile f, FindDataFile(rel_dir + "/" + name + ".json"));
  ASSIGN_OR_RETURN(Json j, core::ParseJson(f.text, f.origin));
  Status header = CheckDataFileHeader(j, kind, max_version, /*required=*/true);
  if (!header.ok()) return header.WithPrefix(f.origin);
  return LoadedDataFile{std::move(j), std::move(f.origin)};
}

Status CheckDataFileHeader(const Json& j, const std::string& kind, int max_version, bool required) {
  if (!j.is_object()) {
    return core::InvalidArgument("document: got " + std::string(j.type_name()) +
                                 ", must be an object");
  }
  if (required || j.contains("kind")) {
    ASSIGN_OR_RETURN(std::string k, core::GetString(j, "", "kind"));
    if (k != kind) {
      return core::InvalidArgument("kind: got '" + k + "', must be '" + kind +
                                   "' (this is read as a " + kind + " file)");
    }
  }
  if (required || j.contains("version")) {
    const Json& v = j.contains("version") ? j["version"] : Json();
    if (!j.contains("version")) return core::InvalidArgument("version: missing required field");
    if (!v.is_number_integer()) {
      return core::InvalidArgument("version: got " + core::ShowJson(v) +
                                   ", must be an integer schema version, e.g. " +
                                   std::to_string(max_version));
    }
    // An unsigned value above INT64_MAX is out of range too (never wrapped to a negative).
    const bool huge =
        v.is_number_unsigned() &&
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    const int64_t version = huge ? std::numeric_limits<int64_t>::max() : v.get<int64_t>();
    if (version < 1 || version > max_version) {
      const std::string allowed =
          max_version == 1 ? "version 1" : "versions 1 to " + std::to_string(max_version);
      return core::InvalidArgument("version: got " + core::ShowJson(v) + ", this build reads " +
                                   kind + " files of " + allowed +
                                   " (upgrade tessera or rewrite the file)");
    }
  }
  if (required || j.contains("provenance")) {
    ASSIGN_OR_RETURN(std::string prov, core::GetString(j, "", "provenance"));
    if (prov.empty()) {
      return core::InvalidArgument(
          "provenance: must be a non-empty string, e.g. \"modeled from datasheets\"");
    }
  }
  if (j.contains("sources")) {
    const Json& s = j["sources"];
    bool ok = s.is_array();
    for (size_t i = 0; ok && i < s.size(); ++i) ok = s[i].is_string();
    if (!ok) {
      return core::InvalidArgument("sources: got " + core::ShowJson(s) +
                                   ", must be an array of strings (notes on where numbers come "
                                   "from)");
    }
  }
  return Status::Ok();
}

}  // namespace tessera::hw

#include "tree_snapshot.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

namespace tessera::fuzz {
namespace {

namespace fs = std::filesystem;

std::optional<TreeEntry> ReadEntry(const fs::path& p) {  // see ReadTreeEntry
  std::error_code ec;
  fs::file_status st = fs::symlink_status(p, ec);
  if (ec || !fs::exists(st)) return std::nullopt;
  TreeEntry e;
  if (fs::is_symlink(st)) {
    e.type = TreeEntry::Type::kSymlink;
    e.data = fs::read_symlink(p, ec).string();
  } else if (fs::is_directory(st)) {
    e.type = TreeEntry::Type::kDirectory;
  } else if (fs::is_regular_file(st)) {
    e.type = TreeEntry::Type::kFile;
    std::ifstream in(p, std::ios::binary);
    e.data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return e;
}

bool Skipped(const fs::path& rel, const std::set<std::string>& skip) {
  return !rel.empty() && skip.count(rel.begin()->string()) > 0;
}

// Every entry under root (not following symlinks), relative paths, skipped folders left out.
std::vector<std::string> ListTree(const std::string& root, const std::set<std::string>& skip) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    fs::path rel = it->path().lexically_relative(root);
    if (Skipped(rel, skip)) {
      if (it.depth() == 0) it.disable_recursion_pending();
      continue;
    }
    out.push_back(rel.generic_string());
  }
  return out;
}

}  // namespace

TreeSnapshot TakeSnapshot(const std::string& root, const std::set<std::string>& skip) {
  TreeSnapshot snap;
  for (const std::string& rel : ListTree(root, skip)) {
    if (auto e = ReadEntry(fs::path(root) / rel)) snap[rel] = std::move(*e);
  }
  return snap;
}

TreeDiff DiffTree(const std::string& root, const TreeSnapshot& before,
                  const std::set<std::string>& skip) {
  TreeDiff d;
  for (const auto& [rel, entry] : before) {
    std::optional<TreeEntry> now = ReadEntry(fs::path(root) / rel);
    if (!now || !(*now == entry)) d.changed.push_back(rel);
  }
  for (const std::string& rel : ListTree(root, skip)) {
    if (before.count(rel) == 0) d.added.push_back(rel);
  }
  return d;
}

std::vector<std::string> RestoreEntries(const std::string& root, const TreeSnapshot& before,
                                        const std::vector<std::string>& paths) {
  std::vector<std::string> failed;
  // Parents sort before their children in a std::set of relative paths.
  std::set<std::string> todo(paths.begin(), paths.end());
  for (const std::string& rel : todo) {
    const fs::path p = fs::path(root) / rel;
    const TreeEntry& want = before.at(rel);
    std::error_code ec;
    std::optional<TreeEntry> now = ReadEntry(p);
    if (now && now->type == TreeEntry::Type::kDirectory &&
        want.type == TreeEntry::Type::kDirectory) {
      continue;
    }
    if (now) fs::remove_all(p, ec);
    ec.clear();
    switch (want.type) {
      case TreeEntry::Type::kDirectory:
        fs::create_directories(p, ec);
        break;
      case TreeEntry::Type::kSymlink:
        fs::create_symlink(want.data, p, ec);
        break;
      case TreeEntry::Type::kFile: {
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out.write(want.data.data(), static_cast<std::streamsize>(want.data.size()));
        if (!out) ec = std::make_error_code(std::errc::io_error);
        break;
      }
      case TreeEntry::Type::kOther:
        break;
    }
    if (ec || !(ReadEntry(p) == std::optional<TreeEntry>(want))) failed.push_back(rel);
  }
  return failed;
}

std::vector<std::string> RemoveEntries(const std::string& root,
                                       const std::vector<std::string>& paths) {
  std::vector<std::string> failed;
  for (const std::string& rel : paths) {
    const fs::path p = fs::path(root) / rel;
    std::error_code ec;
    fs::remove_all(p, ec);
    if (fs::exists(fs::symlink_status(p, ec))) failed.push_back(rel);
  }
  return failed;
}

std::optional<TreeEntry> ReadTreeEntry(const std::string& path) { return ReadEntry(path); }

std::string Describe(const TreeEntry& e) {
  switch (e.type) {
    case TreeEntry::Type::kFile:
      return "file (" + std::to_string(e.data.size()) + " bytes)";
    case TreeEntry::Type::kDirectory:
      return "directory";
    case TreeEntry::Type::kSymlink:
      return "symlink -> " + e.data;
    case TreeEntry::Type::kOther:
      break;
  }
  return "special file";
}

}  // namespace tessera::fuzz

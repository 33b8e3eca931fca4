// TreeSnapshot: every entry under a directory (type, and the bytes of a regular file or the
// target of a symlink), taken before a fuzz case so that afterwards the harness can tell which
// inputs the case changed or removed and which entries it left behind, and put the tree back.
// Symlinks are recorded, never followed; entries whose first path component is in `skip` (the
// harness's own folders) are left out. Paths are relative to the root, '/'-separated.
// Not thread-safe; one harness thread owns a tree.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tessera::fuzz {

struct TreeEntry {
  enum class Type { kFile, kDirectory, kSymlink, kOther };
  Type type = Type::kOther;
  std::string data;  // file bytes, or symlink target
  bool operator==(const TreeEntry&) const = default;
};

using TreeSnapshot = std::map<std::string, TreeEntry>;

struct TreeDiff {
  std::vector<std::string> changed;  // in the snapshot, now different or gone
  std::vector<std::string> added;    // not in the snapshot (contents not read)
};

TreeSnapshot TakeSnapshot(const std::string& root, const std::set<std::string>& skip);

// Compares the tree now with `before` (reading only the entries `before` holds).
TreeDiff DiffTree(const std::string& root, const TreeSnapshot& before,
                  const std::set<std::string>& skip);

// Puts `paths` back as `before` has them (removing what is there now first); returns the
// paths it could not restore.
std::vector<std::string> RestoreEntries(const std::string& root, const TreeSnapshot& before,
                                        const std::vector<std::string>& paths);

// Removes `paths` (relative to root; folders with their contents); returns the ones that
// could not be removed.
std::vector<std::string> RemoveEntries(const std::string& root,
                                       const std::vector<std::string>& paths);

// The entry at `path` now (nullopt when nothing is there).
std::optional<TreeEntry> ReadTreeEntry(const std::string& path);

// A short description of an entry: "file (1234 bytes)", "symlink -> x", "directory".
std::string Describe(const TreeEntry& e);

}  // namespace tessera::fuzz

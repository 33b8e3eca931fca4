#include "case_runner.h"

#include <filesystem>

#include "command_table.h"
#include "tree_snapshot.h"

namespace tessera::fuzz {
namespace {

namespace fs = std::filesystem;

// `path` relative to root when it lies inside root ("" otherwise).
std::string InsideRoot(const fs::path& path, const fs::path& root) {
  fs::path rel = path.lexically_normal().lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..") return "";
  return rel.generic_string();
}

// The relative paths a case may create: its outputs and what symlinks among them point to.
std::set<std::string> DeclaredOutputs(const FuzzCase& c, const std::string& root,
                                      const TreeSnapshot& before) {
  std::set<std::string> out;
  for (const std::string& o : c.outputs) {
    fs::path p = o.empty() || o[0] != '/' ? fs::path(root) / o : fs::path(o);
    std::string rel = InsideRoot(p, root);
    for (int hop = 0; hop < 8 && !rel.empty(); ++hop) {
      out.insert(rel);
      auto it = before.find(rel);
      if (it == before.end() || it->second.type != TreeEntry::Type::kSymlink) break;
      p = (fs::path(root) / rel).parent_path() / it->second.data;
      rel = InsideRoot(p, root);
    }
  }
  return out;
}

}  // namespace

const std::set<std::string>& CaseRunner::SkippedFolders() {
  static const std::set<std::string> skip = {".harness", "repro"};
  return skip;
}

CaseRunner::CaseRunner(std::string bin, const SampleFiles& s, double timeout_s)
    : bin_(std::move(bin)), s_(s), timeout_s_(timeout_s) {}

CaseOutcome CaseRunner::Run(const FuzzCase& c) const {
  const std::set<std::string>& skip = SkippedFolders();
  const TreeSnapshot before = TakeSnapshot(s_.root, skip);

  ProcessSpec spec;
  spec.argv = {bin_};
  spec.argv.insert(spec.argv.end(), c.args.begin(), c.args.end());
  std::vector<std::string> env = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
  env.insert(env.end(), c.env.begin(), c.env.end());
  spec.env = EnvironmentWith(env);
  spec.cwd = s_.root;
  spec.timeout_s = timeout_s_;

  CaseOutcome o;
  o.process = RunProcess(spec);
  o.failures = CheckProcess(o.process, timeout_s_);
  for (const std::string& e : c.env) {
    if (e == kNoMpiexecPath &&
        o.process.stderr_text.find("cannot start mpiexec") != std::string::npos) {
      o.reached_mpiexec = true;
    }
  }

  const TreeDiff diff = DiffTree(s_.root, before, skip);
  for (const std::string& rel : diff.changed) {
    const std::optional<TreeEntry> now = ReadTreeEntry(s_.root + "/" + rel);
    o.failures.push_back(
        {FailureClass::kInputChanged,
         rel + ": was " + Describe(before.at(rel)) + ", now " + (now ? Describe(*now) : "gone")});
  }
  const std::set<std::string> declared = DeclaredOutputs(c, s_.root, before);
  std::vector<std::string> stray;
  for (const std::string& rel : diff.added) {
    if (declared.count(rel) > 0) continue;
    // Inside a declared output (an output that is a new folder) counts as that output.
    bool inside = false;
    for (const std::string& d : declared)
      if (rel.compare(0, d.size() + 1, d + "/") == 0) inside = true;
    if (!inside) stray.push_back(rel);
  }
  for (const std::string& rel : stray) {
    const std::optional<TreeEntry> now = ReadTreeEntry(s_.root + "/" + rel);
    o.failures.push_back(
        {FailureClass::kStrayFile, rel + " (" + (now ? Describe(*now) : "gone") + ")"});
  }
  RemoveEntries(s_.root, diff.added);
  for (const std::string& rel : RestoreEntries(s_.root, before, diff.changed)) {
    o.failures.push_back({FailureClass::kInputChanged, rel + ": could not be restored"});
  }
  return o;
}

}  // namespace tessera::fuzz

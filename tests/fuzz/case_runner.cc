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

// `paths` (absolute, or relative to root) that lie inside root, with what symlinks among them
// point to (as `before` has them), as relative paths.
std::set<std::string> WithLinkTargets(const std::vector<std::string>& paths,
                                      const std::string& root, const TreeSnapshot& before) {
  std::set<std::string> out;
  for (const std::string& o : paths) {
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

// Does `rel` lie inside one of `dirs` (or is it one of them, when `itself`)?
bool InsideDirs(const std::string& rel, const std::set<std::string>& dirs, bool itself) {
  for (const std::string& d : dirs) {
    if (itself && rel == d) return true;
    if (rel.size() > d.size() && rel.compare(0, d.size(), d) == 0 && rel[d.size()] == '/') {
      return true;
    }
  }
  return false;
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
  // The case timeout is CPU time (a busy loop), which a loaded machine does not stretch; a
  // command waiting on something that never comes is caught by a wall limit kWallFactor times
  // longer.
  spec.cpu_timeout_s = timeout_s_;
  spec.timeout_s = kWallFactor * timeout_s_;

  CaseOutcome o;
  o.process = RunProcess(spec);
  o.failures = CheckProcess(o.process);
  for (const std::string& e : c.env) {
    if (e == kNoMpiexecPath &&
        o.process.stderr_text.find("cannot start mpiexec") != std::string::npos) {
      o.reached_mpiexec = true;
    }
  }

  const TreeDiff diff = DiffTree(s_.root, before, skip);
  // What the case may write: its outputs (through symlinks) when they create a file or replace
  // a regular file that the case does not also read; a folder or a symlink it names stays.
  const std::set<std::string> declared = WithLinkTargets(c.outputs, s_.root, before);
  const std::set<std::string> read = WithLinkTargets(c.inputs, s_.root, before);
  // Folders it was asked to fill: it may create them and create or replace files inside.
  const std::set<std::string> dirs = WithLinkTargets(c.output_dirs, s_.root, before);
  for (const std::string& rel : diff.changed) {
    const TreeEntry& was = before.at(rel);
    if ((declared.count(rel) > 0 || InsideDirs(rel, dirs, false)) && read.count(rel) == 0 &&
        was.type == TreeEntry::Type::kFile) {
      continue;
    }
    const std::optional<TreeEntry> now = ReadTreeEntry(s_.root + "/" + rel);
    std::string why;
    if (declared.count(rel) > 0) {
      why = read.count(rel) > 0 ? " (named as an output and read as an input)"
                                : " (named as an output, but not a regular file)";
    }
    o.failures.push_back({FailureClass::kInputChanged, rel + ": was " + Describe(was) + ", now " +
                                                           (now ? Describe(*now) : "gone") + why});
  }
  std::vector<std::string> stray;
  for (const std::string& rel : diff.added)
    if (declared.count(rel) == 0 && !InsideDirs(rel, dirs, true)) stray.push_back(rel);
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

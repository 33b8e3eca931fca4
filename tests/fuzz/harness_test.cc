// The CLI fuzz harness's own checks, tested to fail: each invariant fires on a process result
// or a work folder that breaks it, the process runner reports exits, signals and timeouts (and
// kills what a command left running), the tree snapshot finds and undoes changes, the shell
// quoting round-trips through bash, and the case generators are deterministic and keep the
// MPI-relaunching subcommands from launching.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bad_values.h"
#include "case_runner.h"
#include "command_table.h"
#include "help_check.h"
#include "invariants.h"
#include "json_mutator.h"
#include "option_fuzz.h"
#include "process_runner.h"
#include "shell_quote.h"
#include "tree_snapshot.h"

namespace tessera::fuzz {
namespace {

namespace fs = std::filesystem;

ProcessResult Exited(int code, std::string err) {
  ProcessResult r;
  r.started = true;
  r.exit_code = code;
  r.stderr_text = std::move(err);
  return r;
}

std::vector<FailureClass> Classes(const std::vector<Failure>& f) {
  std::vector<FailureClass> c;
  for (const Failure& x : f) c.push_back(x.cls);
  return c;
}

TEST(Invariants, EachFiresOnWhatBreaksIt) {
  using F = FailureClass;
  EXPECT_TRUE(CheckProcess(Exited(0, "warning\nmore\n")).empty());
  EXPECT_TRUE(CheckProcess(Exited(1, "tessera: --x: got 'y', must be z\n")).empty());
  EXPECT_TRUE(CheckProcess(Exited(1, "tessera: no newline")).empty());
  EXPECT_EQ(Classes(CheckProcess(Exited(2, "tessera: internal\n"))), std::vector<F>{F::kExitCode});
  EXPECT_EQ(Classes(CheckProcess(Exited(134, ""))), std::vector<F>{F::kExitCode});
  EXPECT_EQ(Classes(CheckProcess(Exited(1, "tessera: a\nb\n"))), std::vector<F>{F::kStderr});
  EXPECT_EQ(Classes(CheckProcess(Exited(1, "Could not convert: --fps = abc\n"))),
            std::vector<F>{F::kStderr});
  EXPECT_EQ(Classes(CheckProcess(Exited(1, ""))), std::vector<F>{F::kStderr});
  ProcessResult truncated = Exited(1, "tessera: long");
  truncated.stderr_truncated = true;
  EXPECT_EQ(Classes(CheckProcess(truncated)), std::vector<F>{F::kStderr});
  ProcessResult sig = Exited(-1, "");
  sig.signaled = true;
  sig.signal = 11;
  EXPECT_EQ(Classes(CheckProcess(sig)), std::vector<F>{F::kSignal});
  ProcessResult hang = Exited(-1, "");
  hang.timed_out = true;
  EXPECT_EQ(Classes(CheckProcess(hang)), std::vector<F>{F::kTimeout});
}

ProcessResult Sh(const std::string& script, double timeout_s = 20, double cpu_timeout_s = 0) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.env = EnvironmentWith({});
  spec.cwd = "/";
  spec.timeout_s = timeout_s;
  spec.cpu_timeout_s = cpu_timeout_s;
  return RunProcess(spec);
}

// A busy loop is ended by its CPU time, however slowly a loaded machine runs it (the wall limit
// here is never reached); a sleeping command uses no CPU and is ended only by the wall limit.
TEST(ProcessRunner, ACpuLimitEndsABusyLoopNotAWait) {
  ProcessResult r = Sh("while :; do :; done", 3600, 0.3);
  EXPECT_TRUE(r.timed_out);
  EXPECT_TRUE(r.cpu_limit);
  EXPECT_GE(r.cpu_s, 0.3);
  EXPECT_EQ(r.limit_s, 0.3);
  const std::vector<Failure> f = CheckProcess(r);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].detail.find("used 0.3 s of CPU without ending"), std::string::npos) << f[0].detail;
  r = Sh("sleep 0.2; exit 4", 3600, 0.3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 4);
}

TEST(ProcessRunner, ExitSignalTimeoutAndLeftovers) {
  ProcessResult r = Sh("echo oops >&2; echo out; exit 3");
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.stderr_text, "oops\n");
  r = Sh("kill -SEGV $$");
  EXPECT_TRUE(r.signaled);
  EXPECT_EQ(r.signal, 11);
  // The runner kills the shell at its timeout: a shell that outlived it would have written the
  // mark after its sleep (an order of events, not a time bound).
  const std::string timeout_mark = ::testing::TempDir() + "/harness_timeout_mark";
  std::remove(timeout_mark.c_str());
  r = Sh("sleep 30; touch " + timeout_mark, 0.3);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(std::ifstream(timeout_mark).good());
  // A helper left running in the background holds stderr open; the runner must not wait for it:
  // the helper writes its mark only when it ends, so the mark must not exist yet on return.
  const std::string helper_mark = ::testing::TempDir() + "/harness_helper_mark";
  std::remove(helper_mark.c_str());
  r = Sh("(sleep 30; touch " + helper_mark + ") & echo started >&2; exit 0");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stderr_text, "started\n");
  EXPECT_FALSE(std::ifstream(helper_mark).good());
  ProcessSpec missing;
  missing.argv = {"/nonexistent/tessera"};
  missing.cwd = "/";
  EXPECT_FALSE(RunProcess(missing).started);
}

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "tessera-fuzz-test-XXXXXX").string();
    path_ = mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void Write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

TEST(TreeSnapshot, FindsAndUndoesChanges) {
  TempDir d;
  const fs::path root = d.path();
  fs::create_directories(root / "in/sub");
  fs::create_directories(root / ".harness");
  Write(root / "in/a.json", "{\"a\": 1}");
  Write(root / "in/sub/b.json", "[]");
  fs::create_symlink("a.json", root / "in/link");
  const std::set<std::string> skip = {".harness"};
  const TreeSnapshot before = TakeSnapshot(d.path(), skip);
  EXPECT_EQ(before.size(), 5u);  // in, in/sub and the three entries

  Write(root / "in/a.json", "{\"a\": 2}");
  fs::remove(root / "in/link");
  Write(root / "in/sub/b.json.tmp", "");
  Write(root / ".harness/ignored", "x");
  TreeDiff diff = DiffTree(d.path(), before, skip);
  EXPECT_EQ(diff.changed, (std::vector<std::string>{"in/a.json", "in/link"}));
  EXPECT_EQ(diff.added, (std::vector<std::string>{"in/sub/b.json.tmp"}));

  EXPECT_TRUE(RestoreEntries(d.path(), before, diff.changed).empty());
  EXPECT_TRUE(RemoveEntries(d.path(), diff.added).empty());
  diff = DiffTree(d.path(), before, skip);
  EXPECT_TRUE(diff.changed.empty());
  EXPECT_TRUE(diff.added.empty());
}

// A fake tessera that overwrites an input, writes its output and a leftover temporary file.
TEST(CaseRunner, ReportsAndRepairsWhatACaseBroke) {
  TempDir d;
  SampleFiles s;
  s.root = d.path();
  s.in_dir = s.root + "/in";
  s.out_dir = s.root + "/out";
  fs::create_directories(s.in_dir);
  fs::create_directories(s.out_dir);
  fs::create_directories(s.root + "/.harness");
  Write(s.in_dir + "/cluster.json", "{}");
  const std::string fake = s.root + "/.harness/fake-tessera";
  Write(fake,
        "#!/bin/sh\necho broken > in/cluster.json\necho ok > out/result.json\n"
        "echo partial > out/result.json.tmp\necho 'tessera: first' >&2\necho second >&2\n"
        "exit 1\n");
  fs::permissions(fake, fs::perms::owner_all);
  const CaseRunner runner(fake, s, 20);
  FuzzCase c;
  c.args = {"zellige", "plan", "--json", s.out_dir + "/result.json"};
  c.outputs = {s.out_dir + "/result.json"};
  CaseOutcome o = runner.Run(c);
  using F = FailureClass;
  EXPECT_EQ(Classes(o.failures), (std::vector<F>{F::kStderr, F::kInputChanged, F::kStrayFile}));
  std::ifstream in(s.in_dir + "/cluster.json");
  std::string restored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(restored, "{}");
  EXPECT_FALSE(fs::exists(s.out_dir + "/result.json"));
  EXPECT_FALSE(fs::exists(s.out_dir + "/result.json.tmp"));

  // An output that reaches an input through a symlink: replacing it is what an output does,
  // unless the case also reads that file.
  fs::create_symlink("cluster.json", s.in_dir + "/link");
  Write(fake, "#!/bin/sh\necho new > in/link\nexit 0\n");
  c.outputs = {s.in_dir + "/link"};
  EXPECT_TRUE(runner.Run(c).failures.empty());
  c.inputs = {"in/cluster.json"};
  EXPECT_EQ(Classes(runner.Run(c).failures), std::vector<F>{F::kInputChanged});
  // A folder named as an output is never replaced.
  fs::create_directory(s.in_dir + "/folder");
  Write(fake, "#!/bin/sh\nrmdir in/folder && echo x > in/folder\nexit 0\n");
  c.outputs = {s.in_dir + "/folder"};
  c.inputs = {};
  EXPECT_EQ(Classes(runner.Run(c).failures), std::vector<F>{F::kInputChanged});
  EXPECT_TRUE(fs::is_directory(s.in_dir + "/folder"));
  // A folder to fill (tarot scenes --out): files created inside it are outputs, files beside it
  // are strays.
  Write(fake, "#!/bin/sh\nmkdir -p out/set && echo a > out/set/a.png && echo b > out/b.png\n");
  c.outputs = {};
  c.output_dirs = {s.out_dir + "/set"};
  EXPECT_EQ(Classes(runner.Run(c).failures), std::vector<F>{F::kStrayFile});
  EXPECT_FALSE(fs::exists(s.out_dir + "/set"));
}

TEST(ShellQuote, RoundTripsThroughBash) {
  const std::vector<std::string> args = {"",
                                         "plain",
                                         "with space",
                                         "it's",
                                         "a\nb",
                                         "\xff\xfe",
                                         "ünï 🙂",
                                         "$HOME",
                                         "`x`",
                                         "back\\slash",
                                         std::string(70000, 'a'),
                                         "pre" + std::string(100, '%') + "post",
                                         "x" + std::string(80, '\'') + "y"};
  for (const std::string& a : args) {
    ProcessSpec spec;
    spec.argv = {"/bin/bash", "-c", "printf %s " + ShellQuote(a) + " >&2"};
    spec.env = EnvironmentWith({});
    spec.cwd = "/";
    ProcessResult r = RunProcess(spec);
    EXPECT_EQ(r.exit_code, 0) << ShellQuote(a);
    EXPECT_EQ(r.stderr_text, a) << ShellQuote(a);
  }
}

TEST(ShellQuote, PrintableIsOneLine) {
  EXPECT_EQ(Printable("a\nb\tc\xff ünï"), "a\\nb\\tc\\xff ünï");
}

TEST(HelpCheck, ReadsCli11Help) {
  const std::string help =
      "Run it\nUsage: tessera zellige run [OPTIONS]\n\nOptions:\n"
      "  -h,--help                   Print this help message and exit\n"
      "  --plan TEXT                 plan JSON\n"
      "  --token-scale FLOAT=0.015625\n"
      "                              multiply every sequence's tokens by this\n"
      "  --mixes TEXT=[v35,v50] ...  mixtures\n"
      "  --check                     compare\n\nSubcommands:\n"
      "  tokens                      Count tokens\n"
      "  bench-planner               Compare\n";
  EXPECT_EQ(NamesInHelp(help, false),
            (std::vector<std::string>{"--plan", "--token-scale", "--mixes", "--check"}));
  EXPECT_EQ(NamesInHelp(help, true), (std::vector<std::string>{"tokens", "bench-planner"}));
}

TEST(JsonMutator, DeterministicAndChangesTheFile) {
  const std::string text =
      R"({"kind": "cluster", "nodes": 2, "intra": {"bw": 1e9, "name": "nv"}, "ranks": [0, 1]})";
  int changed = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    core::Rng a(seed), b(seed);
    JsonMutation ma = MutateJson(text, "", a), mb = MutateJson(text, "", b);
    EXPECT_EQ(ma.text, mb.text);
    EXPECT_EQ(ma.description, mb.description);
    if (ma.text != text + "\n" && ma.text != text) ++changed;
  }
  EXPECT_GT(changed, 280);
}

TEST(OptionFuzz, RelaunchingSubcommandsNeverLaunch) {
  SampleFiles s;
  s.root = "/tmp/w";
  s.in_dir = "/tmp/w/in";
  s.out_dir = "/tmp/w/out";
  s.cluster = s.in_dir + "/cluster.json";
  s.run_plans = {s.in_dir + "/run_mixed4.json"};
  const std::vector<SubcommandSpec> table = CommandTable(s);
  const BadValues bad(s);
  int relaunching = 0;
  for (int i = 0; i < 3000; ++i) {
    core::Rng rng = core::Rng(7).Fork(i), again = core::Rng(7).Fork(i);
    FuzzCase c = MakeOptionCase(i, table, bad, s, rng);
    EXPECT_EQ(c.args, MakeOptionCase(i, table, bad, s, again).args);
    ASSERT_GE(c.args.size(), 2u);
    EXPECT_TRUE(c.args[0] == "zellige" || c.args[0] == "compass" || c.args[0] == "xema" ||
                c.args[0] == "kernelflume" || c.args[0] == "elaswave" || c.args[0] == "tarot")
        << c.args[0];
    if (c.subcommand == "profile" || c.subcommand == "validate" || c.subcommand == "compare" ||
        c.subcommand == "links") {
      ++relaunching;
      EXPECT_NE(std::find(c.env.begin(), c.env.end(), kNoMpiexecPath), c.env.end()) << c.what;
    }
  }
  EXPECT_GT(relaunching, 0);
}

}  // namespace
}  // namespace tessera::fuzz

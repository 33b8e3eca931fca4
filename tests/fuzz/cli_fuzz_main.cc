// tessera_cli_fuzz: a seeded fuzz harness for the `tessera` command line (issue #21, "never
// crash, never destroy a file"). It sets up sample inputs in a work folder, then runs
// --cases generated command lines, half option fuzz (option_fuzz.h), half JSON mutation fuzz
// (json_fuzz.h), and checks every case against the invariants of invariants.h. It prints a
// summary with a reproducible command line per failure class and exits 0 when every case
// kept the invariants, 1 when one did not, 2 when the harness itself could not run.
//
//   tessera_cli_fuzz --bin build/release/src/cli/tessera [--seed 1] [--cases 300]
//       [--budget-s 60] [--case-timeout-s 20] [--workdir DIR] [--only N] [--verbose]
//
// Case i is generated from Rng(seed).Fork(i) alone, so `--seed S --only i` reruns one case.
// The work folder (a fresh one under $TMPDIR unless --workdir) is removed at the end when
// every case passed, and kept otherwise so the printed command lines can be rerun.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bad_values.h"
#include "case_runner.h"
#include "command_table.h"
#include "core/progress.h"
#include "fuzz_report.h"
#include "help_check.h"
#include "json_fuzz.h"
#include "option_fuzz.h"
#include "sample_files.h"
#include "shell_quote.h"

#ifndef TESSERA_SOURCE_DIR
#define TESSERA_SOURCE_DIR "."
#endif

namespace tessera::fuzz {
namespace {

namespace fs = std::filesystem;

struct Flags {
  std::string bin;
  uint64_t seed = 1;
  int cases = 300;
  double budget_s = 0;  // 0: no budget
  double case_timeout_s = 20;
  std::string workdir;
  std::string source_dir = TESSERA_SOURCE_DIR;
  int only = -1;
  int examples = 5;
  bool verbose = false;
};

// Option fuzz for 60 cases in 100, JSON mutation for the rest.
constexpr uint64_t kOptionShare = 60;

std::string Repro(const FuzzCase& c, const std::string& bin, const std::string& root) {
  std::string env;
  for (const std::string& e : c.env) env += ShellQuote(e) + " ";
  return "cd " + ShellQuote(root) + " && " + env + ShellQuote(bin) + " " + ShellJoin(c.args);
}

// A failing case's own files (or folders) move to repro/ (left alone by the checks) and its
// arguments and environment follow them; a passing case's are removed.
void Settle(FuzzCase* c, bool failed, const SampleFiles& s) {
  for (const std::string& f : c->case_files) {
    std::error_code ec;
    if (!failed) {
      fs::remove_all(f, ec);
      continue;
    }
    const std::string dest = s.root + "/repro/" + fs::path(f).filename().string();
    fs::create_directories(s.root + "/repro", ec);
    fs::rename(f, dest, ec);
    if (ec) continue;
    for (std::vector<std::string>* list : {&c->args, &c->env}) {
      for (std::string& a : *list) {
        const size_t at = a.find(f);
        if (at != std::string::npos) a.replace(at, f.size(), dest);
      }
    }
  }
}

int Main(const Flags& flags) {
  using Clock = std::chrono::steady_clock;
  if (access(flags.bin.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "tessera_cli_fuzz: --bin %s: not an executable file\n", flags.bin.c_str());
    return 2;
  }
  const std::string bin = fs::absolute(flags.bin).lexically_normal().string();
  std::string root = flags.workdir;
  const bool own_root = root.empty();
  if (own_root) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/tessera-fuzz-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("tessera_cli_fuzz: mkdtemp");
      return 2;
    }
    root = tmpl;
  }
  auto samples = SetUpSamples(bin, flags.source_dir, root);
  if (!samples.ok()) {
    std::fprintf(stderr, "tessera_cli_fuzz: setting up %s: %s\n", root.c_str(),
                 samples.status().message().c_str());
    return 2;
  }
  const SampleFiles& s = *samples;
  const std::vector<SubcommandSpec> table = CommandTable(s);
  const std::vector<JsonTarget> targets = JsonTargets(s);
  const BadValues bad(s);
  const CaseRunner runner(bin, s, flags.case_timeout_s);
  char budget[32] = "none";
  if (flags.budget_s > 0) std::snprintf(budget, sizeof(budget), "%g s", flags.budget_s);
  std::printf("tessera_cli_fuzz: %s, seed %llu, %d cases, budget %s, case timeout %g s of CPU\n",
              bin.c_str(), static_cast<unsigned long long>(flags.seed), flags.cases, budget,
              flags.case_timeout_s);
  std::printf("work folder %s\n", s.root.c_str());
  std::fflush(stdout);

  if (core::Status st = CheckTableAgainstHelp(bin, table, s.root); !st.ok()) {
    std::fprintf(stderr, "tessera_cli_fuzz: %s\n", st.message().c_str());
    return 2;
  }
  // The base command lines must be valid and keep the invariants, or the cases built on
  // them test nothing.
  for (const FuzzCase& base : BaseCases(table)) {
    CaseOutcome o = runner.Run(base);
    if (o.process.started && o.process.exit_code == 0 && o.failures.empty()) continue;
    std::fprintf(stderr, "tessera_cli_fuzz: base command does not pass (%s): %s\n  %s\n",
                 o.failures.empty() ? FirstLine(o.process.stderr_text).c_str()
                                    : o.failures[0].detail.c_str(),
                 o.process.start_error.c_str(), Repro(base, bin, s.root).c_str());
    return 2;
  }

  FuzzReport report(flags.examples);
  const Clock::time_point t0 = Clock::now();
  auto elapsed = [&t0] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  int first = 0, last = flags.cases;
  if (flags.only >= 0) first = flags.only, last = flags.only + 1;
  bool out_of_time = false;
  core::ProgressBar progress("fuzz", last - first);  // drawn only on a terminal
  for (int i = first; i < last; ++i) {
    progress.Update(i - first);
    if (flags.budget_s > 0 && elapsed() >= flags.budget_s) {
      out_of_time = true;
      break;
    }
    core::Rng rng = core::Rng(flags.seed).Fork(static_cast<uint64_t>(i));
    FuzzCase c;
    if (rng.Below(100) < kOptionShare) {
      c = MakeOptionCase(i, table, bad, s, rng);
    } else {
      auto jc = MakeJsonCase(i, targets, s, rng);
      if (!jc.ok()) {
        std::fprintf(stderr, "tessera_cli_fuzz: case %d: %s\n", i, jc.status().message().c_str());
        return 2;
      }
      c = std::move(*jc);
    }
    CaseOutcome o = runner.Run(c);
    if (!o.process.started) {
      std::fprintf(stderr, "tessera_cli_fuzz: case %d: %s\n", i, o.process.start_error.c_str());
      return 2;
    }
    Settle(&c, !o.failures.empty(), s);
    const std::string repro = Repro(c, bin, s.root);
    if (flags.verbose || (!o.failures.empty() && flags.only >= 0)) {
      std::printf("#%d %s %s [%s] %.2fs exit %d: %s\n", i, FamilyName(c.family),
                  c.subcommand.c_str(), Printable(c.what).c_str(), o.process.wall_s,
                  o.process.exit_code, FirstLine(o.process.stderr_text).c_str());
      for (const Failure& f : o.failures) {
        std::printf("   FAIL [%s] %s\n   %s\n", FailureClassName(f.cls), f.detail.c_str(),
                    repro.c_str());
      }
      std::fflush(stdout);
    }
    report.Add(c, o, repro);
  }
  progress.Done();
  const double total_s = elapsed();
  std::printf("\n");
  if (out_of_time) {
    std::printf("budget of %g s used up: ran %d of %d cases\n", flags.budget_s, report.cases(),
                last - first);
  }
  std::printf("%d cases in %.1f s (seed %llu)\n", report.cases(), total_s,
              static_cast<unsigned long long>(flags.seed));
  report.Print(stdout);
  if (report.failing_cases() > 0) {
    std::printf("\nFAILED: %d of %d cases broke an invariant; work folder kept: %s\n",
                report.failing_cases(), report.cases(), s.root.c_str());
    return 1;
  }
  std::printf("\nPASS: every case kept the invariants\n");
  if (own_root) {
    std::error_code ec;
    fs::remove_all(s.root, ec);
  }
  return 0;
}

}  // namespace
}  // namespace tessera::fuzz

int main(int argc, char** argv) {
  tessera::fuzz::Flags f;
  CLI::App app{"tessera_cli_fuzz: seeded fuzzing of the tessera command line"};
  app.add_option("--bin", f.bin, "the tessera binary")->required();
  app.add_option("--seed", f.seed, "seed of the case generator")->capture_default_str();
  app.add_option("--cases", f.cases, "cases to run")->capture_default_str();
  app.add_option("--budget-s", f.budget_s, "stop starting cases after this many seconds (0: none)")
      ->capture_default_str();
  app.add_option("--case-timeout-s", f.case_timeout_s,
                 "kill a case after this many CPU seconds (or 15x as many wall seconds)")
      ->capture_default_str();
  app.add_option("--workdir", f.workdir, "work folder (empty or new; default: a fresh one)");
  app.add_option("--source-dir", f.source_dir, "the tessera repository (sample data)")
      ->capture_default_str();
  app.add_option("--only", f.only, "run only case N (with the same --seed)");
  app.add_option("--examples", f.examples, "example command lines per failure class")
      ->capture_default_str();
  app.add_flag("--verbose", f.verbose, "print every case");
  CLI11_PARSE(app, argc, argv);
  if (f.cases < 0 || f.case_timeout_s <= 0 || f.budget_s < 0 || f.examples < 0) {
    std::fprintf(stderr,
                 "tessera_cli_fuzz: --cases, --case-timeout-s, --budget-s and "
                 "--examples must not be negative (and the timeout > 0)\n");
    return 2;
  }
  return tessera::fuzz::Main(f);
}

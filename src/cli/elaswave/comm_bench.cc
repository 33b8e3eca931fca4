// `tessera elaswave comm-bench`: how long the survivors of a kill -9 take to have a working
// communicator again -- ElasWave's in-place edit beside the partial and full rebuilds of the
// same UCX communicator and a fresh Gloo context (what TorchFT does), for each --ranks N, over
// --repeats repetitions of N real processes on 127.0.0.1 (elaswave/comm_bench.h). Prints the
// p50 and max per N and mode and the ratio to in-place (measured on this machine); --json
// writes every repetition. Fails when any survivor's collective was wrong.
#include "elaswave/comm_bench.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "cli/elaswave/job_args.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "core/table.h"

namespace tessera::cli {
namespace {

struct ElasWaveCommBenchArgs {
  std::vector<int64_t> ranks = {8, 16, 32};
  std::vector<std::string> modes;
  int64_t repeats = 3;
  double timeout_s = 300;
  std::string run_dir, json_path;
  bool quiet = false;
};

std::string CommBenchCell(double s) { return s < 0 ? "-" : core::Fixed(s * 1e3, 3); }

core::Status RunElasWaveCommBench(const ElasWaveCommBenchArgs& a) {
  elaswave::CommBenchOptions o;
  o.ranks.assign(a.ranks.begin(), a.ranks.end());
  o.modes.clear();
  for (const std::string& m : a.modes) {
    ASSIGN_OR_RETURN(const elaswave::CommChangeMode mode, elaswave::ParseCommChangeMode(m));
    o.modes.push_back(mode);
  }
  o.repeats = static_cast<int>(a.repeats);
  o.timeout_s = a.timeout_s;
  ASSIGN_OR_RETURN(o.self_exe, TesseraBinaryPath());
  o.run_dir = a.run_dir.empty() ? "-" : a.run_dir;  // checked below, made after the checks
  RETURN_IF_ERROR(elaswave::CheckCommBenchOptions(o));
  const bool own_run_dir = a.run_dir.empty();
  if (own_run_dir) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "tessera-commbench-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return core::Internal("cannot create a run directory in /tmp");
    o.run_dir = tmpl;
  }
  const int cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  int most = 0;
  for (int n : o.ranks) most = std::max(most, n);
  std::fprintf(
      stdout, "run directory: %s%s\n", o.run_dir.c_str(),
      most > cores
          ? fmt::format(" (up to {} processes on {} cores: oversubscribed)", most, cores).c_str()
          : "");
  // Progress lines go to a terminal only, as core::ProgressBar's do: on a pipe or in a log,
  // stderr keeps the one error line of a failed run.
  if (!a.quiet && ::isatty(STDERR_FILENO) == 1) {
    o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  }
  ASSIGN_OR_RETURN(const elaswave::CommBenchResult r, elaswave::RunCommBench(o));

  using elaswave::CommBenchRowKind;
  core::Table t({"ranks", "change", "repetitions", "p50 ms", "max ms", "p50 / inplace p50",
                 "call alone p50 ms"});
  const elaswave::CommBenchRow* inplace32 = nullptr;
  const elaswave::CommBenchRow* steady32 = nullptr;
  for (const elaswave::CommBenchRow& row : r.rows) {
    const bool mode = row.kind == CommBenchRowKind::kMode;
    const std::string name =
        row.kind == CommBenchRowKind::kDetect   ? "detect (kill -> failed collective)"
        : row.kind == CommBenchRowKind::kSteady ? "steady AllReduceSum (no change)"
                                                : elaswave::CommChangeModeName(row.mode);
    const std::string ratio =
        !mode || row.ratio_to_inplace < 0 ? "-" : fmt::format("{:.1f}x", row.ratio_to_inplace);
    t.AddRow({std::to_string(row.ranks), name, std::to_string(row.stats.count),
              CommBenchCell(row.stats.p50_s), CommBenchCell(row.stats.max_s), ratio,
              mode ? CommBenchCell(row.call.p50_s) : "-"});
    if (row.ranks == 32 && mode && row.mode == elaswave::CommChangeMode::kInPlace) {
      inplace32 = &row;
    }
    if (row.ranks == 32 && row.kind == CommBenchRowKind::kSteady) steady32 = &row;
  }
  std::printf("%s", t.Render().c_str());
  std::printf(
      "\nmeasured on this machine (%d cores; N processes on 127.0.0.1 share them): a figure is "
      "the slowest survivor of a repetition, from the start of the change to the end of the "
      "first AllReduceSum after it (checked by every survivor); call alone: the change's own "
      "call without that collective; steady: the same AllReduceSum of the survivors on "
      "connections already up, the floor under every change; detect: from the SIGKILL to the "
      "last survivor's failed pending collective\n",
      r.cores);
  if (inplace32 != nullptr) {
    const bool met = inplace32->stats.p50_s <= 0.050 && inplace32->stats.max_s < 1.0;
    std::printf(
        "in-place edit at 32 processes: p50 %s ms (goal <= 50 ms), max %s ms (goal < 1 s): "
        "%s%s\n",
        CommBenchCell(inplace32->stats.p50_s).c_str(),
        CommBenchCell(inplace32->stats.max_s).c_str(), met ? "met" : "NOT met",
        steady32 == nullptr
            ? ""
            : fmt::format(" (the call alone p50 {} ms; a steady AllReduceSum p50 {} ms)",
                          CommBenchCell(inplace32->call.p50_s),
                          CommBenchCell(steady32->stats.p50_s))
                  .c_str());
  }
  std::printf("every survivor's collectives were correct: %zu repetitions\n", r.repetitions.size());
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, r.ToJson()));
  if (own_run_dir) {
    std::error_code ignored;
    std::filesystem::remove_all(o.run_dir, ignored);
  }
  return core::Status::Ok();
}

}  // namespace

void AddElasWaveCommBench(CLI::App* elaswave, Action* action) {
  auto a = std::make_shared<ElasWaveCommBenchArgs>();
  a->modes = {"inplace", "partial", "full"};
  if (elaswave::CommBenchHasGloo()) a->modes.push_back("gloo");
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = elaswave->add_subcommand(
      "comm-bench",
      "Communicator change after a kill -9: in-place edit vs partial and full rebuild and Gloo");
  ListOption(c, "--ranks", &a->ranks, "processes per measurement, comma separated (3..64)",
             Integer(3, 64));
  ListOption(c, "--mode", &a->modes,
             "changes to time, comma separated: inplace, partial, full, gloo");
  c->add_option("--repeats", a->repeats, "repetitions per process count")
      ->transform(Integer(1, 1000))
      ->capture_default_str();
  c->add_option("--timeout", a->timeout_s,
                "seconds a repetition may take before it is stopped (a hang guard)")
      ->check(PositiveNumber(3600))
      ->capture_default_str();
  paths->OutputFolder(c, "--run-dir", &a->run_dir,
                      "folder for the processes' files (default: a new folder in /tmp, removed "
                      "after a successful run)");
  paths->Output(c, "--json", &a->json_path, "write every repetition and the summary as JSON here");
  c->add_flag("--quiet", a->quiet, "no progress line per repetition");
  c->callback(
      [action, a, paths] { *action = Checked(paths, [a] { return RunElasWaveCommBench(*a); }); });
}

}  // namespace tessera::cli

// The options every `tessera elaswave` command that starts a job shares (run, bench): the model,
// the dp x pp x tp shape, the batch, the steps, the timeouts and the run directory, and how they
// become a LaunchOptions (checked before any process starts, each error naming its flag). `plan`
// takes the shape options alone and the same checks.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/options.h"
#include "core/status.h"
#include "elaswave/launcher.h"

namespace tessera::cli {

struct ElasWaveJobArgs {
  std::string model = "gpt-mini";
  int dp = 2, pp = 2, tp = 2;
  int64_t processes = -1;
  int64_t global_batch = 32, micro_batch = 2, steps = 20, seq = -1;
  double dropout = 0.1, learning_rate = 1e-3;
  int64_t seed = 1;
  std::string policy = "elaswave";
  std::string run_dir;
  double heartbeat_timeout_s = 1.0, op_timeout_s = 30, recovery_timeout_s = 60;
  double coordinator_timeout_s = 30, job_timeout_s = 900;
  bool quiet = false;
};

// This binary's path (/proc/self/exe): what the commands start as their processes.
core::StatusOr<std::string> TesseraBinaryPath();

// A table cell of seconds: 3 decimals, "-" for an unknown (negative) figure.
std::string SecondsCell(double s);

// The job's shape alone (what `plan` takes): --model, --dp, --pp, --tp, --global-batch,
// --micro-batch, --seq.
void AddElasWaveShapeOptions(CLI::App* c, ElasWaveJobArgs* a, CommandPaths* paths);
// The shape and everything a job that starts processes needs (run, bench).
void AddElasWaveJobOptions(CLI::App* c, ElasWaveJobArgs* a, CommandPaths* paths);
// The launch options of the job (no faults, no run directory yet), progress to stderr unless
// --quiet; every check of the options is made here.
core::StatusOr<elaswave::LaunchOptions> ElasWaveLaunchOptions(const ElasWaveJobArgs& a);
// After every other check: the run directory (--run-dir, or a new folder in /tmp) and one line
// on stderr naming it (and saying when the processes oversubscribe the cores).
core::Status PrepareRunDirectory(const ElasWaveJobArgs& a, elaswave::LaunchOptions& o);

}  // namespace tessera::cli

// What `tessera xema abuse` and `tessera kernelflume abuse` share -- the same for every server,
// only the suite (and the hostile run's valid request) differs: their flags, the hostile run,
// and how the serving core's abuse and hostile-client reports (serve/abuse.h, serve/hostile.h)
// are printed: the tables, the summary lines, the JSON file, and the verdict.
// Errors: the JSON file's write error; FailedPrecondition "<what> check failed: ..." listing the
// report's failures when it did not pass. Thread-safety: one call at a time (stdout).
#pragma once

#include <string>

#include "cli/options.h"
#include "core/status.h"
#include "serve/abuse.h"
#include "serve/hostile.h"

namespace tessera::cli {

struct AbuseCliArgs {
  std::string url;
  int64_t requests = 1000;
  int64_t connections = 200;
  uint64_t seed = 1;
  int64_t server_pid = -1;
  int64_t rss_bound_bytes = int64_t{16} << 20;
  std::string json_path;
  bool hostile = false;
  serve::HostileOptions h;
};

// Adds the abuse commands' flags (--url ... --drain-deadline-s) to `c`.
void AddAbuseFlags(CLI::App* c, AbuseCliArgs* a, CommandPaths* paths);

// InvalidArgument for --server-pid 0 (not a process to sample).
core::Status CheckAbuseArgs(const AbuseCliArgs& a);

// The serving core's abuse options from the flags.
serve::AbuseOptions AbuseOptionsOf(const AbuseCliArgs& a);

// --hostile: runs serve/hostile.h's cases with `valid_path` / `valid_body` as the valid request
// and reports them (ReportHostile).
core::Status RunHostileFromFlags(const AbuseCliArgs& a, const std::string& valid_path,
                                 const std::string& valid_body);

// Prints the hostile cases' table and summary, writes json_path (when not empty) and returns
// the verdict.
core::Status ReportHostile(const serve::HostileOptions& options, const serve::HostileReport& r,
                           const std::string& json_path);

// Prints the abuse kinds' table, examples, the summary and the RSS samples, writes `json`
// to json_path (when not empty) and returns the verdict.
core::Status ReportAbuse(const serve::AbuseReport& r, const core::Json& json,
                         const std::string& json_path);

}  // namespace tessera::cli

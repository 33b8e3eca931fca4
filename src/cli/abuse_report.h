// How `tessera xema abuse` and `tessera kernelflume abuse` print the serving core's abuse and
// hostile-client reports (serve/abuse.h, serve/hostile.h): the tables, the summary lines, the
// JSON file, and the verdict -- the same for every server, only the suite differs.
// Errors: the JSON file's write error; FailedPrecondition "<what> check failed: ..." listing the
// report's failures when it did not pass. Thread-safety: one call at a time (stdout).
#pragma once

#include <string>

#include "core/status.h"
#include "serve/abuse.h"
#include "serve/hostile.h"

namespace tessera::cli {

// Prints the hostile cases' table and summary, writes json_path (when not empty) and returns
// the verdict.
core::Status ReportHostile(const serve::HostileOptions& options, const serve::HostileReport& r,
                           const std::string& json_path);

// Prints the abuse kinds' table, examples, the summary and the RSS samples, writes `json`
// to json_path (when not empty) and returns the verdict.
core::Status ReportAbuse(const serve::AbuseReport& r, const core::Json& json,
                         const std::string& json_path);

}  // namespace tessera::cli

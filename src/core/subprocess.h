// RunProcess: runs a program to completion and reports how it ended, for the few places a
// command hands work to another tool (the plot scripts, cli/plot.h). No shell is involved:
// argv[0] is looked up on PATH (execvp rules) and the arguments are passed as given.
//
// The child inherits stdin and stdout; its stderr is captured (the last kMaxStderrBytes
// bytes are kept) so a failure can be reported in one line. Returns the exit code (or
// 128 + signal for a child killed by a signal) with the captured stderr; a program that cannot
// be started is NotFound naming it. Blocks until the child exits.
// Thread-safety: reentrant (no shared state besides the process table).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::core {

inline constexpr size_t kMaxStderrBytes = 64 * 1024;

struct ProcessResult {
  int exit_code = 0;
  std::string stderr_text;
  // The last non-empty line of stderr ("" when there is none): the usual one-line reason.
  std::string LastStderrLine() const;
};

StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv);

// The building blocks RunProcess and core::ChildProcess (child_process.h) share:
// SpawnWithStderr starts argv (PATH lookup, no shell) with its stderr on `stderr_fd` and returns
// its pid; a program that cannot be started is NotFound naming it. ExitCodeOf turns a waitpid
// status into the exit code, or 128 + signal. LastLine is the last non-empty line of `text`
// without its line end ("" when there is none).
StatusOr<int> SpawnWithStderr(const std::vector<std::string>& argv, int stderr_fd);
int ExitCodeOf(int wait_status);
std::string LastLine(const std::string& text);

}  // namespace tessera::core

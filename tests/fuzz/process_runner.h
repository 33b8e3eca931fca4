// RunProcess: runs one command as a child process for the CLI fuzz harness and reports how it
// ended. The child gets stdin and stdout on /dev/null, stderr on a pipe the parent captures
// (the first max_stderr_bytes), the given working directory and environment, and its own
// process group. When the command has used cpu_timeout_s of CPU (its own threads and the
// children it reaped: a busy loop) or runs past timeout_s of wall time (a wait that never
// ends), the whole group is killed (SIGKILL). CPU time does not grow when a loaded machine
// delays the command, so the CPU limit can be tight and the wall limit generous;
// after a normal exit the group is killed too, so no helper it started (an MPI daemon) outlives
// the case. The program is exec'd by path (no PATH search).
// Thread-safety: call from one thread at a time (it forks and waits for its own child only).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tessera::fuzz {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0]: the program's path
  std::vector<std::string> env;   // the child's whole environment, "NAME=value"
  std::string cwd;                // working directory of the child
  double timeout_s = 20;          // wall seconds
  double cpu_timeout_s = 0;       // CPU seconds of the child (0: no CPU limit)
  bool stdout_to_stderr = false;  // capture stdout too (merged into stderr_text)
  size_t max_stderr_bytes = 1 << 20;
};

struct ProcessResult {
  bool started = false;     // false: fork or exec failed (start_error says why)
  std::string start_error;  // e.g. "exec /x/tessera: No such file or directory"
  bool timed_out = false;   // killed by the harness after timeout_s or cpu_timeout_s
  bool cpu_limit = false;   // ... and it was the CPU limit
  double limit_s = 0;       // the limit it ran past
  bool signaled = false;    // ended by a signal it did not handle (not the harness's kill)
  int signal = 0;           // that signal
  int exit_code = -1;       // exit status when it exited normally
  std::string stderr_text;  // what it wrote to stderr (truncated to max_stderr_bytes)
  bool stderr_truncated = false;
  double wall_s = 0;
  double cpu_s = 0;  // the child's CPU time when it ended or was killed
};

ProcessResult RunProcess(const ProcessSpec& spec);

// The environment of this process with `overrides` ("NAME=value") replacing or adding entries.
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& overrides);

}  // namespace tessera::fuzz

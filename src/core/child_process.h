// ChildProcess: a program started in the background and owned by this process -- the attention
// nodes a KernelFlume `generate` starts on this machine, the workers of later systems. No shell:
// argv[0] is a path or is looked up on PATH (execvp rules). The child inherits stdin and stdout;
// its stderr goes to an anonymous in-memory file so that a failure can be reported by its last
// line (StderrTail) without a thread draining a pipe.
//
// Lifetime: the destructor kills a child that is still running (SIGKILL) and reaps it, so no
// child outlives its owner and no zombie is left. Exit codes follow RunProcess: the exit
// status, or 128 + signal for a child killed by a signal.
// Thread-safety: one thread at a time per object.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::core {

class ChildProcess {
 public:
  // Starts argv; NotFound naming argv[0] when it cannot be executed.
  static StatusOr<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The exit code once the child has ended (polls without blocking), else nullopt.
  std::optional<int> Poll();
  // Blocks until the child ends; returns its exit code.
  int Wait();
  // Sends `signal` (e.g. SIGKILL) if the child is still running.
  void Signal(int signal);
  // Up to the last `max_bytes` bytes the child wrote to stderr.
  std::string StderrTail(size_t max_bytes = 4096) const;
  // The last non-empty line of stderr ("" if none).
  std::string LastStderrLine() const;

 private:
  ChildProcess(pid_t pid, int stderr_fd) : pid_(pid), stderr_fd_(stderr_fd) {}
  pid_t pid_;
  int stderr_fd_;
  std::optional<int> exit_code_;
};

}  // namespace tessera::core

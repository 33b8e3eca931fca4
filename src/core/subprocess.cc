#include "core/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace tessera::core {

std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(begin, end - begin + 1);
}

std::string ProcessResult::LastStderrLine() const { return LastLine(stderr_text); }

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

StatusOr<int> SpawnWithStderr(const std::vector<std::string>& argv, int stderr_fd) {
  if (argv.empty() || argv[0].empty()) return InvalidArgument("spawn: empty command line");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, stderr_fd, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return NotFound("cannot run '" + argv[0] + "': " + std::strerror(rc));
  return static_cast<int>(pid);
}

StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].empty()) return InvalidArgument("RunProcess: empty command line");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  StatusOr<int> pid = SpawnWithStderr(argv, fds[1]);
  close(fds[1]);
  if (!pid.ok()) {
    close(fds[0]);
    return pid.status();
  }
  ProcessResult result;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n > 0) {
      result.stderr_text.append(buf, static_cast<size_t>(n));
      if (result.stderr_text.size() > kMaxStderrBytes)
        result.stderr_text.erase(0, result.stderr_text.size() - kMaxStderrBytes);
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(*pid, &status, 0) < 0) {
    if (errno != EINTR) return Internal(std::string("waitpid: ") + std::strerror(errno));
  }
  result.exit_code = ExitCodeOf(status);
  return result;
}

}  // namespace tessera::core

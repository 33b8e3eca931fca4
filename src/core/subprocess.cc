#include "core/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace tessera::core {

std::string ProcessResult::LastStderrLine() const {
  size_t end = stderr_text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  size_t begin = stderr_text.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return stderr_text.substr(begin, end - begin + 1);
}

StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].empty()) return InvalidArgument("RunProcess: empty command line");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return NotFound("cannot run '" + argv[0] + "': " + std::strerror(rc));
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
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Internal(std::string("waitpid: ") + std::strerror(errno));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace tessera::core

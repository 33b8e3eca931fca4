#include "core/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace tessera::core {
namespace {

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace

StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) return InvalidArgument("child process: empty command line");
  const int fd = memfd_create("child-stderr", MFD_CLOEXEC);
  if (fd < 0) return Internal(std::string("child process: memfd_create: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    close(fd);
    return NotFound("cannot start '" + argv[0] + "': " + std::strerror(rc));
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, fd));
}

ChildProcess::~ChildProcess() {
  if (!exit_code_.has_value()) {
    kill(pid_, SIGKILL);
    Wait();
  }
  close(stderr_fd_);
}

std::optional<int> ChildProcess::Poll() {
  if (exit_code_.has_value()) return exit_code_;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) exit_code_ = ExitCodeOf(status);
  return exit_code_;
}

int ChildProcess::Wait() {
  while (!exit_code_.has_value()) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, 0);
    if (r == pid_) {
      exit_code_ = ExitCodeOf(status);
    } else if (r < 0 && errno != EINTR) {
      exit_code_ = 255;
    }
  }
  return *exit_code_;
}

void ChildProcess::Signal(int signal) {
  if (!Poll().has_value()) kill(pid_, signal);
}

std::string ChildProcess::StderrTail(size_t max_bytes) const {
  struct stat st {};
  if (fstat(stderr_fd_, &st) != 0 || st.st_size <= 0) return "";
  const size_t size = static_cast<size_t>(st.st_size);
  const size_t n = size < max_bytes ? size : max_bytes;
  std::string out(n, '\0');
  const ssize_t got = pread(stderr_fd_, out.data(), n, static_cast<off_t>(size - n));
  out.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return out;
}

std::string ChildProcess::LastStderrLine() const {
  std::string text = StderrTail();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace tessera::core

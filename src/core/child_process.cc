#include "core/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/subprocess.h"

namespace tessera::core {

StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) return InvalidArgument("child process: empty command line");
  const int fd = memfd_create("child-stderr", MFD_CLOEXEC);
  if (fd < 0) return Internal(std::string("child process: memfd_create: ") + std::strerror(errno));
  StatusOr<int> pid = SpawnWithStderr(argv, fd);
  if (!pid.ok()) {
    close(fd);
    return pid.status();
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(*pid, fd));
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

std::string ChildProcess::LastStderrLine() const { return LastLine(StderrTail()); }

}  // namespace tessera::core

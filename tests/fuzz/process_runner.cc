#include "process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

extern char** environ;

namespace tessera::fuzz {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The CPU seconds process `pid` has used (user + system, its threads and the children it
// reaped), from /proc/<pid>/stat; -1 when it cannot be read.
double CpuSeconds(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return -1;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // Fields after the command name (which may hold spaces and parentheses): field 3 (state)
  // onwards; utime, stime, cutime, cstime are fields 14-17.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return -1;
  unsigned long long ticks[4] = {0, 0, 0, 0};
  int field = 2;
  for (const char* q = p + 1; *q != '\0' && field < 17;) {
    while (*q == ' ') ++q;
    ++field;
    if (field >= 14 && field <= 17) ticks[field - 14] = std::strtoull(q, nullptr, 10);
    while (*q != ' ' && *q != '\0') ++q;
  }
  if (field < 17) return -1;
  const long hz = sysconf(_SC_CLK_TCK);
  return static_cast<double>(ticks[0] + ticks[1] + ticks[2] + ticks[3]) /
         static_cast<double>(hz > 0 ? hz : 100);
}

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// In the child, between fork and exec: only async-signal-safe calls. Reports a failure as
// errno on `report_fd` and exits 127.
[[noreturn]] void ExecChild(char* const* argv, char* const* envp, const char* cwd, int err_fd,
                            bool stdout_to_stderr, int report_fd) {
  setpgid(0, 0);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int null_fd = open("/dev/null", O_RDWR);
  int err = 0;
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(stdout_to_stderr ? err_fd : null_fd, 1) < 0 ||
      dup2(err_fd, 2) < 0 || chdir(cwd) != 0) {
    err = errno;
  } else {
    execve(argv[0], argv, envp);
    err = errno;
  }
  ssize_t n = write(report_fd, &err, sizeof(err));
  (void)n;
  _exit(127);
}

// Reads what is available on a non-blocking fd into `out` (up to `max` bytes kept).
// Returns false at end of file.
bool Drain(int fd, std::string* out, size_t max, bool* truncated) {
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      size_t keep = std::min(static_cast<size_t>(n), max - std::min(max, out->size()));
      out->append(buf, keep);
      if (keep < static_cast<size_t>(n)) *truncated = true;
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return true;  // EAGAIN: nothing more now
  }
}

}  // namespace

std::vector<std::string> EnvironmentWith(const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> env;
  auto put = [&env](const std::string& kv) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) return;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) put(*e);
  for (const std::string& kv : overrides) put(kv);
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

ProcessResult RunProcess(const ProcessSpec& spec) {
  ProcessResult r;
  if (spec.argv.empty()) {
    r.start_error = "empty argv";
    return r;
  }
  std::vector<std::string> argv_s = spec.argv, env_s = spec.env;
  std::vector<char*> argv = CStrings(argv_s), envp = CStrings(env_s);
  int err_pipe[2], report_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    r.start_error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  if (pipe2(report_pipe, O_CLOEXEC) != 0) {
    r.start_error = std::string("pipe: ") + std::strerror(errno);
    close(err_pipe[0]);
    close(err_pipe[1]);
    return r;
  }
  const Clock::time_point t0 = Clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    r.start_error = std::string("fork: ") + std::strerror(errno);
    for (int fd : {err_pipe[0], err_pipe[1], report_pipe[0], report_pipe[1]}) close(fd);
    return r;
  }
  if (pid == 0) {
    ExecChild(argv.data(), envp.data(), spec.cwd.c_str(), err_pipe[1], spec.stdout_to_stderr,
              report_pipe[1]);
  }
  setpgid(pid, pid);  // also in the parent, so the kill below never misses the group
  close(err_pipe[1]);
  close(report_pipe[1]);

  int exec_errno = 0;
  ssize_t got = read(report_pipe[0], &exec_errno, sizeof(exec_errno));
  close(report_pipe[0]);
  const bool exec_failed = got == static_cast<ssize_t>(sizeof(exec_errno));

  fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
  bool eof = false;
  for (;;) {
    siginfo_t info{};
    // WNOWAIT: the child stays a zombie, so its pid (= the group id) is not reused before the
    // group is killed below.
    if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) break;
    if (SecondsSince(t0) >= spec.timeout_s) {
      r.timed_out = true;
      r.limit_s = spec.timeout_s;
      break;
    }
    if (spec.cpu_timeout_s > 0) {
      if (const double cpu = CpuSeconds(pid); cpu >= spec.cpu_timeout_s) {
        r.timed_out = r.cpu_limit = true;
        r.limit_s = spec.cpu_timeout_s;
        break;
      }
    }
    if (!eof) {
      pollfd p{err_pipe[0], POLLIN, 0};
      poll(&p, 1, 20);
      eof = !Drain(err_pipe[0], &r.stderr_text, spec.max_stderr_bytes, &r.stderr_truncated);
    } else {
      usleep(5000);
    }
  }
  r.cpu_s = std::max(0.0, CpuSeconds(pid));  // the zombie's figures are final
  kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.wall_s = SecondsSince(t0);
  // What the child wrote before it ended; a helper still holding the pipe was killed above.
  for (int i = 0; i < 20 && !eof; ++i) {
    pollfd p{err_pipe[0], POLLIN, 0};
    if (poll(&p, 1, 10) <= 0) break;
    eof = !Drain(err_pipe[0], &r.stderr_text, spec.max_stderr_bytes, &r.stderr_truncated);
  }
  close(err_pipe[0]);

  if (exec_failed) {
    r.start_error = "exec " + spec.argv[0] + ": " + std::strerror(exec_errno);
    return r;
  }
  r.started = true;
  if (r.timed_out) return r;
  if (WIFSIGNALED(status)) {
    r.signaled = true;
    r.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  }
  return r;
}

}  // namespace tessera::fuzz

#include "cli/mpi_launch.h"

#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "comm/mpi_environment.h"
#include "core/heap_tuning.h"
#include "kernels/gemm.h"

namespace tessera::cli {
namespace {
std::vector<std::string>& Args() {
  static std::vector<std::string> args;
  return args;
}

// Whether a process may read another's memory with process_vm_readv (Linux cross-memory
// attach, OpenMPI's single-copy path for large shared-memory messages): a forked child reads
// a value from this process, which needs the same permission as one rank reading a sibling.
// Containers often forbid it (seccomp, Yama ptrace_scope); then OpenMPI must not try it.
bool CrossMemoryAttachWorks() {
  static volatile int probe = 0x5e55e7a;
  const pid_t parent = getpid();
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) return false;
  if (child == 0) {
    int value = 0;
    iovec local{&value, sizeof(value)};
    iovec remote{const_cast<int*>(&probe), sizeof(value)};
    const ssize_t n = process_vm_readv(parent, &local, 1, &remote, 1, 0);
    _exit(n == static_cast<ssize_t>(sizeof(value)) && value == probe ? 0 : 1);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

void SetProgramArgs(int argc, char** argv) { Args().assign(argv, argv + argc); }

bool InsideMpiJob() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

core::Status RelaunchUnderMpi(int ranks) {
  if (InsideMpiJob()) return core::Status::Ok();
  if (ranks < 1) {
    return core::InvalidArgument("--ranks: got " + std::to_string(ranks) + ", must be >= 1");
  }
  if (Args().empty()) return core::Internal("RelaunchUnderMpi: SetProgramArgs was not called");
  if (geteuid() == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // -q: a user error is printed once by rank 0 (main.cc); mpiexec's own "process returned a
  // non-zero exit code" banner would only repeat it.
  std::vector<std::string> cmd = {"mpiexec", "-q", "-np", std::to_string(ranks), "--oversubscribe",
                                  "--bind-to",
                                  static_cast<unsigned>(ranks) <= cores ? "core" : "none", "--mca",
                                  "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism",
                                  // CMA made training steps ~25% faster here (the gradient
                                  // all-reduce copies once instead of through the FIFOs).
                                  CrossMemoryAttachWorks() ? "cma" : "none", "/proc/self/exe"};
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len > 0) {
    exe[len] = '\0';
    cmd.back() = exe;
  }
  cmd.insert(cmd.end(), Args().begin() + 1, Args().end());
  std::vector<char*> argv;
  for (std::string& s : cmd) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp(argv[0], argv.data());
  return core::Unavailable(std::string("cannot start mpiexec (") + std::strerror(errno) +
                           "); install OpenMPI (scripts/install-deps.sh) or run under mpirun");
}

core::Status RunMpiJob(int ranks, double op_timeout_s,
                       const std::function<core::Status(comm::Communicator& world)>& body) {
  RETURN_IF_ERROR(RelaunchUnderMpi(ranks));
  ASSIGN_OR_RETURN(auto env, comm::MpiEnvironment::Create(nullptr, nullptr));
  comm::Communicator& world = env->world();
  if (world.size() != ranks) {
    return core::InvalidArgument("--ranks " + std::to_string(ranks) + " but MPI started " +
                                 std::to_string(world.size()) + " ranks");
  }
  world.set_op_timeout_s(op_timeout_s);
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  core::UseSteadyHeap();  // steady step times from the second step on
  core::Status st = body(world);
  const auto code = st.code();
  if (code == core::StatusCode::kDeadlineExceeded || code == core::StatusCode::kUnavailable) {
    world.Abort(st);
  }
  return st;
}

}  // namespace tessera::cli

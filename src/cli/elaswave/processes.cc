// `tessera elaswave worker|coordinator --job F`: the processes `tessera elaswave run` starts,
// one per rank and one coordinator; they read the job file `run` wrote. Not for direct use
// (their help says so); they exit with the job's code (0 finished, 1 failed).
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "elaswave/worker.h"
#include "kernels/gemm.h"

namespace tessera::cli {
namespace {

struct ElasWaveProcessArgs {
  std::string job_path;
  int rank = 0;
  bool restarted = false;
};

core::Status RunElasWaveProcess(const ElasWaveProcessArgs& a, bool worker) {
  // Die with the launcher: a job must never outlive the command that started it.
  const pid_t parent = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) std::_Exit(1);
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));  // the same GEMM bits in every process
  ASSIGN_OR_RETURN(const core::Json j, core::ReadJsonFile(a.job_path));
  ASSIGN_OR_RETURN(const elaswave::ElasticJobConfig job, elaswave::JobFromJson(j, a.job_path));
  if (worker && a.rank >= job.trainer.shape.processes()) {
    return core::InvalidArgument(fmt::format("--rank: got {}, the job has {} processes", a.rank,
                                             job.trainer.shape.processes()));
  }
  const int code =
      worker ? elaswave::RunWorker(job, a.rank) : elaswave::RunCoordinator(job, a.restarted);
  std::fflush(stdout);
  std::_Exit(code);  // skip static destructors: peers may still be tearing down connections
}

}  // namespace

void AddElasWaveProcesses(CLI::App* elaswave, Action* action) {
  auto w = std::make_shared<ElasWaveProcessArgs>();
  CLI::App* wc = elaswave->add_subcommand(
      "worker", "(started by `elaswave run`) one training process of an elastic job");
  wc->group("");  // not listed in --help: `run` starts it
  wc->add_option("--job", w->job_path, "the job file `run` wrote")->required();
  wc->add_option("--rank", w->rank, "this process's world id")
      ->transform(Integer(0, 4095))
      ->required();
  wc->callback([action, w] { *action = [w] { return RunElasWaveProcess(*w, true); }; });
  auto c = std::make_shared<ElasWaveProcessArgs>();
  CLI::App* cc = elaswave->add_subcommand(
      "coordinator", "(started by `elaswave run`) the coordinator of an elastic job");
  cc->group("");
  cc->add_option("--job", c->job_path, "the job file `run` wrote")->required();
  cc->add_flag("--restarted", c->restarted, "a predecessor died: rebuild from re-registrations");
  cc->callback([action, c] { *action = [c] { return RunElasWaveProcess(*c, false); }; });
}

}  // namespace tessera::cli

// `tessera elaswave worker|coordinator --job F`: the processes `tessera elaswave run` starts,
// one per rank and one coordinator; they read the job file `run` wrote. Not for direct use
// (their help says so); they exit with the job's code (0 finished, 1 failed).
// `tessera elaswave comm-bench-peer`: one process of `elaswave comm-bench`
// (elaswave/comm_bench_peer.h), told everything on its command line.
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "elaswave/comm_bench_peer.h"
#include "elaswave/worker.h"
#include "kernels/gemm.h"

namespace tessera::cli {
namespace {

struct ElasWaveProcessArgs {
  std::string job_path;
  int rank = 0;
  bool restarted = false;
};

struct ElasWaveCommBenchPeerArgs {
  elaswave::CommBenchPeerOptions peer;
  std::vector<std::string> modes;
};

// Die with the launcher: a job must never outlive the command that started it.
void DieWithParent() {
  const pid_t parent = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) std::_Exit(1);
}

core::Status RunElasWaveProcess(const ElasWaveProcessArgs& a, bool worker) {
  DieWithParent();
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

core::Status RunElasWaveCommBenchPeer(ElasWaveCommBenchPeerArgs& a) {
  DieWithParent();
  for (const std::string& m : a.modes) {
    ASSIGN_OR_RETURN(const elaswave::CommChangeMode mode, elaswave::ParseCommChangeMode(m));
    a.peer.modes.push_back(mode);
  }
  const int code = elaswave::RunCommBenchPeer(a.peer);
  std::fflush(stdout);
  std::_Exit(code);  // skip static destructors, as the workers do
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
  auto p = std::make_shared<ElasWaveCommBenchPeerArgs>();
  CLI::App* pc = elaswave->add_subcommand(
      "comm-bench-peer", "(started by `elaswave comm-bench`) one process of the benchmark");
  pc->group("");
  pc->add_option("--dir", p->peer.dir, "the repetition's folder")->required();
  pc->add_option("--id", p->peer.id, "this process's world id")
      ->transform(Integer(0, 63))
      ->required();
  pc->add_option("--ranks", p->peer.ranks, "processes")->transform(Integer(3, 64))->required();
  pc->add_option("--victim", p->peer.victim, "the world id that is killed")
      ->transform(Integer(0, 63))
      ->required();
  ListOption(pc, "--modes", &p->modes, "changes to time")->required();
  pc->add_option("--gloo-prefix", p->peer.gloo_prefix, "the Gloo store prefix")->required();
  pc->add_option("--timeout", p->peer.timeout_s, "every wait's bound, seconds")
      ->check(PositiveNumber(3600));
  pc->callback([action, p] { *action = [p] { return RunElasWaveCommBenchPeer(*p); }; });
}

}  // namespace tessera::cli

// CommBench: what `tessera elaswave comm-bench` measures -- how long the survivors of a real
// process death take to get a working communicator again, with ElasWave's in-place edit beside
// the rebuilds it replaces.
//
// What is measured, for each N in `ranks` and each repetition: N peer processes (the tessera
// binary, hidden subcommand `elaswave comm-bench-peer`, comm_bench_peer.h) on 127.0.0.1 build
// the full UCX mesh (AmWorld::ConnectMesh, addresses exchanged through files in the
// repetition's folder), an AmCommunicator of all N at epoch 0 and run a checked warm-up int64
// AllReduceSum. Then this process SIGKILLs one peer (the victim, a real death), and every
// survivor
//  - detects it: its pending AllReduceSum must fail with Unavailable naming the victim;
//    detect = that moment minus the kill, on the machine's shared monotonic clock;
//  - times a steady AllReduceSum over the survivors on connections that are already up (a
//    communicator of the survivors alone, made before any change): the floor under every mode's
//    figure, since each mode ends with such a collective;
//  - for each mode (always in the order inplace, partial, full, gloo; each at a new epoch),
//    after a barrier of the survivors that is not timed, times from the start of the change to
//    the end of the first collective after it, an AllReduceSum whose sum it checks, and the
//    change's own call alone (without that collective):
//      inplace  AmCommunicator::Reconfigure (same connections)
//      partial  AmCommunicator::RebuildPartial (every connection closed and reopened)
//      full     AmCommunicator::RebuildFull: a fresh UCX transport (its creation is timed), new
//               addresses exchanged through files, the mesh connected again
//      gloo     a fresh Gloo context over the survivors (what TorchFT does on a failure):
//               FileStore in the run directory under a prefix new to the repetition, a TCP
//               device on 127.0.0.1, connectFullMesh, a Gloo allreduce (all timed)
// A repetition's figure for a mode is the MAX over survivors (the change is done when the last
// survivor is done), also for the call alone, the steady collective and the detection; the
// summary per (N, mode) is the p50 and max over repetitions and the p50's ratio to inplace's.
// Units: seconds in every struct and in the JSON. All figures are measured on this machine, with N
// processes sharing its cores (oversubscribed when N exceeds them); nothing is modelled.
//
// Errors: InvalidArgument for bad options (ranks outside [3, 64], repeats < 1, no mode, gloo
// when this build has no Gloo: the message says how to get it); Internal when a peer cannot be
// started; FailedPrecondition naming N, the repetition and the world rank when a peer's check
// fails (a wrong sum, a death not reported as Unavailable naming the victim, a mode that
// errs) or a peer ends early (its last line of stderr); DeadlineExceeded when a repetition
// passes timeout_s (a hang guard, never a speed bound). Every peer is stopped before return.
// Thread-safety: RunCommBench is one call at a time (it owns child processes); the pure
// helpers are reentrant.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "elaswave/fault_bench.h"

namespace tessera::elaswave {

enum class CommChangeMode { kInPlace, kPartial, kFull, kGloo };

// "inplace", "partial", "full", "gloo".
const char* CommChangeModeName(CommChangeMode mode);
// InvalidArgument "--mode: got 'x', must be one of inplace, partial, full, gloo".
core::StatusOr<CommChangeMode> ParseCommChangeMode(const std::string& name);
// The modes in the order they run (inplace, partial, full, gloo), each once.
std::vector<CommChangeMode> OrderedCommChangeModes(std::vector<CommChangeMode> modes);
// Whether this build has Gloo (the gloo mode); the line telling how to get it otherwise.
bool CommBenchHasGloo();
std::string CommBenchNoGlooMessage();

struct CommBenchOptions {
  std::vector<int> ranks = {8, 16, 32};  // processes per measurement, each in [3, 64]
  std::vector<CommChangeMode> modes = {CommChangeMode::kInPlace, CommChangeMode::kPartial,
                                       CommChangeMode::kFull};
  int repeats = 3;
  std::string run_dir;     // a folder (created if missing) for each repetition's files
  std::string self_exe;    // the tessera binary
  double timeout_s = 300;  // a repetition's hang guard (also the peers' op and connect timeout)
  std::function<void(const std::string&)> progress;  // one line per repetition (may be empty)
};

// One repetition at one N: the slowest survivor's seconds.
struct CommBenchRepetition {
  int ranks = 0;
  int repetition = 0;
  int victim = 0;        // the killed world rank
  double detect_s = -1;  // kill -> the last survivor saw the death
  double steady_s = -1;  // a steady AllReduceSum over the survivors, max over them
  std::map<CommChangeMode, double> seconds;       // per mode, change + collective, max
  std::map<CommChangeMode, double> call_seconds;  // per mode, the change's call alone, max
  std::map<CommChangeMode, std::vector<double>> per_survivor;  // seconds, world-rank order
};

// One line of the summary at N processes: the detection, the steady collective, or a mode.
enum class CommBenchRowKind { kDetect, kSteady, kMode };
struct CommBenchRow {
  int ranks = 0;
  CommBenchRowKind kind = CommBenchRowKind::kMode;
  CommChangeMode mode = CommChangeMode::kInPlace;  // kMode only
  PhaseStats stats;                                // over repetitions, seconds
  PhaseStats call;                                 // kMode: the change's call alone
  double ratio_to_inplace = -1;  // kMode: stats.p50_s / inplace's p50 (-1: no inplace figure)
};

struct CommBenchResult {
  std::vector<CommBenchRepetition> repetitions;
  std::vector<CommBenchRow> rows;  // per N (in the order asked): detect, steady, each mode
  int cores = 0;                   // online CPUs of this machine
  core::Json ToJson() const;
};

// The summary rows of `repetitions` (pure): for each N in order of first appearance, the
// detection row, the steady row, then one row per mode of `modes` (in that order) with the p50
// and max over repetitions (of the whole figure and of the call alone) and the ratio of its p50
// to inplace's p50 at the same N.
std::vector<CommBenchRow> SummarizeCommBench(const std::vector<CommBenchRepetition>& repetitions,
                                             const std::vector<CommChangeMode>& modes);

// Checks the options (the errors above) without starting anything.
core::Status CheckCommBenchOptions(const CommBenchOptions& options);
core::StatusOr<CommBenchResult> RunCommBench(const CommBenchOptions& options);

}  // namespace tessera::elaswave

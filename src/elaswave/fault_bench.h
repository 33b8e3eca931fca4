// FaultBench: the consistency and MTTR figures of `tessera elaswave bench` -- one fault-free run
// as the reference, then `runs` runs of the same job, each with one fault drawn from a seed:
// a random target rank, a random step in [1, steps - 2] (so a step follows the recovery), a
// random phase of the step (forward, backward, reduce, commit, optimizer, snapshot) and, for
// forward/backward, a random micro-batch the target's pipeline runs. Each run is compared with
// the reference at every step (state digests, bit for bit), and its recovery's phases are
// collected; the summary gives how many runs were bitwise equal, the p50 / max of each MTTR
// phase (measured, seconds after the signal) and each run's loss deviation from the reference
// (mean |loss - ref| / ref over the steps; the torchft policy's figure, since it changes the
// batch).
// Errors: those of LaunchElasticJob; a run that fails is recorded, not an error.
// Thread-safety: one call at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "elaswave/launcher.h"

namespace tessera::elaswave {

struct FaultBenchOptions {
  LaunchOptions launch;  // the job without faults; its run_dir is the parent of each run's
  int runs = 20;
  uint64_t seed = 1;
  FaultAction action = FaultAction::kKill;  // kill or stop
};

struct FaultBenchRun {
  FaultEvent fault;
  bool finished = false;       // the job ran every step
  bool bitwise_equal = false;  // every step's digest equals the reference's
  std::string note;            // the first difference or the failure
  RecoveryRecord recovery;     // the first recovery (the fault's)
  LossDeviation loss;          // from the reference's loss curve (0 when bitwise equal)
};

struct PhaseStats {
  int count = 0;
  double p50_s = -1, max_s = -1;
};

struct FaultBenchResult {
  JobResult reference;
  std::vector<FaultBenchRun> runs;
  PhaseStats detect, replanned, resumed, committed, committed_net;  // committed minus a step
  int bitwise_equal = 0;
  double mean_loss_deviation = 0;  // over the runs that finished
  double max_loss_deviation = 0;
  core::Json ToJson() const;
};

// One random fault (see above) for `job`; pure function of (job, seed).
FaultEvent RandomFault(const ElasticJobConfig& job, uint64_t seed, FaultAction action);
PhaseStats Stats(std::vector<double> values);

core::StatusOr<FaultBenchResult> RunFaultBench(const FaultBenchOptions& options);

}  // namespace tessera::elaswave

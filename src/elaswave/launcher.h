// LaunchElasticJob: `tessera elaswave run` without mpirun -- writes the job file to the run
// directory, starts the coordinator and the N workers as child processes of this one (the
// tessera binary itself, subcommands `elaswave coordinator` / `elaswave worker`), delivers the
// fault file's events (SIGKILL and SIGSTOP from here, as an operator or a failing machine
// would; a worker at a step/phase fault point marks it and waits for the signal; the
// coordinator is restarted at once after it is killed), waits for the job to end and reads
// every process's event log into a JobResult: per step the loss and the model's state digest
// (checked equal across every holder of each slot), each fault with when it was delivered, and
// each recovery split into its phases on the machine's shared monotonic clock:
//   detect   signal -> the first survivor saw the abort
//   replan   -> the last survivor had its plan installed (communicator edited, state moved)
//   resume   -> the last survivor received the resume (all survivors computing): MTTR_resume
//   commit   -> the redone step was committed: MTTR_commit (the raw figure; the step time
//               after the change is reported beside it)
// Under the restart policy a worker's exit with kRestartExitCode stops every process and starts
// them all again from the newest complete disk checkpoint (resumed / committed are then the
// restarted job's). Coordinator faults given at a step fire once a worker logged that step's
// commit. A worker that
// exits with an error on its own (it could not start, say) ends the job 3 s later unless the
// coordinator ended it first, with the worker's last line of stderr as the reason.
// Errors: InvalidArgument for a bad job (checked before any process starts); Internal when a
// process cannot be started; a job that fails is a JobResult with exit_code 1 and its reason.
// Thread-safety: one call at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "elaswave/job_config.h"

namespace tessera::elaswave {

struct LaunchOptions {
  ElasticJobConfig job;        // run_dir must be set (an empty or new directory)
  std::string self_exe;        // the tessera binary
  double job_timeout_s = 900;  // the whole job, a hang guard
  std::function<void(const std::string&)> progress;  // one line per event (may be empty)
};

struct StepSummary {
  int64_t step = 0;
  double loss = 0;
  uint64_t digest = 0;  // of every (slot, tp rank) state digest, in order
  int slots = 0;        // (slot, tp rank) pairs seen
  bool holders_agree = true;
};

struct FaultRecord {
  size_t index = 0;
  std::string what;
  double delivered_s = -1;  // monotonic; -1: never
};

struct RecoveryRecord {
  int64_t epoch = 0;
  std::vector<int> dead;
  double signal_s = -1;  // the fault that caused it (monotonic), -1 if unknown
  double detect_s = -1, installed_s = -1, resumed_s = -1, committed_s = -1;  // absolute
  int64_t redo_step = -1;
  double post_change_step_s = -1;  // commit-to-commit after the redone step
  // Seconds from the signal to the absolute time `t`; -1 (JSON: null) when either is unknown.
  double After(double t) const { return t < 0 || signal_s < 0 ? -1.0 : t - signal_s; }
  core::Json AfterJson(double t) const {
    return After(t) < 0 ? core::Json() : core::Json(After(t));
  }
};

struct JobResult {
  int exit_code = 0;
  std::string failure;  // the shutdown reason when exit_code != 0
  std::vector<StepSummary> steps;
  std::vector<FaultRecord> faults;
  std::vector<RecoveryRecord> recoveries;
  double wall_s = 0;
  // A Chrome/Perfetto trace of the run: one track per worker (each step from its start to its
  // commit, each recovery from the abort to the resume) and one for the coordinator's decisions.
  core::Json trace;
  core::Json ToJson() const;
};

core::StatusOr<JobResult> LaunchElasticJob(const LaunchOptions& options);
// The checks LaunchElasticJob makes before it starts anything (the shape, the fault events this
// version can deliver), for a caller that wants them before it creates a run directory.
core::Status CheckLaunchable(const ElasticJobConfig& job);

// Reference files (--save-ref / --check): per step the loss and the digest.
core::Json ReferenceToJson(const JobResult& r);
// Compares a run with a reference: OK, or FailedPrecondition naming the first step whose digest
// differs (steps the reference lacks are not compared; a run missing a reference step differs).
core::Status CheckAgainstReference(const JobResult& r, const core::Json& reference,
                                   const std::string& source);
// How far a run's loss curve is from a reference's: mean and max over the steps both have of
// |loss - ref| / ref (0 for a run that is bitwise equal).
struct LossDeviation {
  int steps = 0;
  double mean = 0, max = 0;
};
core::StatusOr<LossDeviation> CompareLoss(const JobResult& r, const core::Json& reference,
                                          const std::string& source);

}  // namespace tessera::elaswave

// RunWorker: one worker process of an elastic training job (`tessera elaswave worker`, started by
// the launcher). It joins the job (transport, coordinator registration, the roster's full mesh),
// trains with ElasticTrainer step by step under the coordinator's commit protocol, and recovers
// per step when ranks die:
//   detect   a collective fails (a dead group member), or the coordinator's abort arrives (its
//            dead ranks are marked dead and every operation of an older epoch is fenced, so no
//            process waits on a peer that has moved on);
//   plan     Replan from the last resumed plan with the newly dead ranks (a pure function;
//            every process computes the same plan and the coordinator compares digests);
//   edit     the communicator is reconfigured in place (same connections, new epoch);
//   promote  state is restored to the last complete step's in-memory snapshot and the plan's
//            transfers move the lost stage's slots from live holders;
//   redo     after every live worker is ready, the coordinator resumes at complete_step + 1;
//   commit   a step's optimizer runs only after the coordinator's commit; then it is snapshotted.
// Fault points (fault_plan.h) for this rank mark the file run_dir/fault-I.hit and wait for the
// launcher's signal (kill -9 or SIGSTOP); slow:F makes each micro-batch take F times longer.
// Events go to run_dir/worker-W.jsonl, one JSON object per line with its time on the shared
// monotonic clock: registered, step (loss, state digests), abort, ready, resumed, done.
// Under the restart policy (TorchElastic's way, the baseline) it instead writes a disk checkpoint
// after every committed step (run_dir/ckpt/step-T/), exits with kRestartExitCode on an abort,
// and starts from the checkpoint the launcher names.
// An unrecoverable plan or a lost coordinator spills the last complete snapshot to
// run_dir/spill-W.{json,bin} and exits 1; a finished job exits 0.
// The caller must end the process after it returns (the worker's connections are not closed).
// Thread-safety: runs the process; call once.
#pragma once

#include "elaswave/job_config.h"

namespace tessera::elaswave {

// Under the restart policy a worker that sees a death exits with this code, and the launcher
// starts the whole job again from the last complete checkpoint.
inline constexpr int kRestartExitCode = 75;

int RunWorker(const ElasticJobConfig& job, int world_id);

// The coordinator process (`tessera elaswave coordinator`): serves the job's coordinator on the
// job's transport, publishes its address in job.AddressFile() (atomically), logs its decisions
// to run_dir/coordinator.jsonl and returns the job's exit code. `restarted`: a predecessor died.
int RunCoordinator(const ElasticJobConfig& job, bool restarted);

}  // namespace tessera::elaswave

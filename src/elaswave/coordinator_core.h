// CoordinatorCore: the decisions of ElasWave's coordinator as a pure state machine -- time is
// an argument and every decision is returned as messages to send, so every protocol path
// (double faults, a restarted coordinator, stale epochs) is unit-tested without processes.
// coordinator.h runs it on the comm transport.
//
// Life of a job (N workers, world ids 0..N-1):
//  1. Registering: workers register. A fresh coordinator waits for all N, then broadcasts
//     roster (epoch 0, complete_step -1): start at step 0. A restarted coordinator (its
//     predecessor died) waits for every worker not reported dead by some registrant, or until
//     `registration_timeout_s` after the first registration (the missing are dead), then takes
//     epoch = max reported + 1 and complete_step = max reported (every worker snapshotted it)
//     and starts a recovery (3) so that everyone redoes from complete_step + 1. A fresh job
//     whose workers have not all registered `start_timeout_s` after the first one ends
//     (shutdown 1 naming the missing ranks).
//  2. Running: heartbeats refresh liveness; when every live computing worker has voted for
//     step t at the current epoch with one plan digest, commit(t) goes to all; when every one
//     of them has reported its snapshot of t, complete_step = t (sent with the next commit).
//     Votes with different digests end the job (shutdown 1): the plans must agree.
//  3. A death -- the transport lost a worker (OnLost), a worker reports a peer lost, or no
//     heartbeat for `heartbeat_timeout_s` (OnTick; the process is then fenced: its pid is
//     returned to be killed, as it may be stopped, not dead) -- bumps the epoch and broadcasts
//     abort {epoch, all dead, complete_step}. Workers recover to the plan of that epoch and
//     answer ready {digest, spare}. A death during recovery bumps the epoch again (the union of
//     the dead). When every live worker is ready at the current epoch with one digest: resume
//     {epoch, complete_step + 1}. A ready with digest 0 carries the workers' "unrecoverable:
//     ..." reason: shutdown 1 with it.
//  4. Done: when every live computing worker reported done, shutdown 0.
// Messages of an older epoch than the current one (ready, vote, snapshot, done) are dropped
// and counted (stale_dropped()).
// Thread-safety: none; one thread drives it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "elaswave/coordinator_protocol.h"

namespace tessera::elaswave {

struct CoordinatorOptions {
  int world_size = 1;
  double heartbeat_timeout_s = 1.0;
  double registration_timeout_s = 5.0;  // a restarted coordinator's wait for re-registrations
  double start_timeout_s = 60.0;        // a fresh job's wait for every worker to register
  bool restarted = false;
  // A job started again from a checkpoint (the restart policy): its first epoch and the step it
  // resumes after (the roster's complete_step).
  int64_t first_epoch = 0;
  int64_t start_complete_step = -1;
};

struct CoordinatorOutput {
  struct Send {
    int to = -1;  // a world id, or -1: every live registered worker
    ControlMessage message;
  };
  std::vector<Send> sends;
  std::vector<int64_t> kill_pids;  // fence: processes declared dead that may still run
  std::vector<std::string> log;    // one line per decision, for the job's output
  void Append(CoordinatorOutput other);
};

class CoordinatorCore {
 public:
  enum class Phase { kRegistering, kRunning, kRecovering, kFinished };

  explicit CoordinatorCore(const CoordinatorOptions& options);

  // A control message from worker `m.world` at time `now_s`.
  CoordinatorOutput OnMessage(const ControlMessage& m, double now_s);
  // The transport lost the connection to `world` (its process died or closed).
  CoordinatorOutput OnLost(int world, const std::string& why, double now_s);
  // Periodic: heartbeat timeouts, the registration window.
  CoordinatorOutput OnTick(double now_s);

  Phase phase() const { return phase_; }
  int64_t epoch() const { return epoch_; }
  int64_t complete_step() const { return complete_step_; }
  int64_t committed_step() const { return committed_step_; }
  const std::set<int>& dead() const { return dead_; }
  int64_t stale_dropped() const { return stale_dropped_; }
  int exit_code() const { return exit_code_; }

 private:
  struct Worker {
    bool registered = false;
    std::string address;
    int64_t pid = 0;
    double last_heartbeat_s = 0;
    bool spare = false;
    int64_t ready_epoch = -1;
    uint64_t ready_digest = 0;
    int64_t voted_step = -1;
    uint64_t vote_digest = 0;
    int64_t snapshot_step = -1;
    bool done = false;
    uint64_t done_digest = 0;
  };

  bool Live(int w) const { return !dead_.count(w) && workers_[w].registered; }
  std::vector<int> LiveComputing() const;
  CoordinatorOutput Register(const ControlMessage& m, double now_s);
  CoordinatorOutput MaybeStart(double now_s, bool window_closed);
  CoordinatorOutput Declare(const std::set<int>& newly_dead, const std::string& why, bool fence);
  CoordinatorOutput MaybeResume();
  CoordinatorOutput MaybeCommit();
  CoordinatorOutput MaybeComplete();
  CoordinatorOutput MaybeFinish();
  CoordinatorOutput Shutdown(int code, const std::string& why);
  CoordinatorOutput Broadcast(ControlMessage m) const;

  CoordinatorOptions options_;
  Phase phase_ = Phase::kRegistering;
  std::vector<Worker> workers_;
  std::set<int> dead_;
  int64_t epoch_ = 0;
  int64_t complete_step_ = -1;
  int64_t committed_step_ = -1;
  int64_t stale_dropped_ = 0;
  int exit_code_ = -1;
  double first_registration_s_ = -1;
  // What re-registrations reported (restarted coordinator).
  int64_t reported_epoch_ = 0;
  int64_t reported_complete_ = -1;
  std::set<int> reported_dead_;
};

std::string CoordinatorPhaseName(CoordinatorCore::Phase p);

}  // namespace tessera::elaswave

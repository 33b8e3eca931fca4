// The fault file of `tessera elaswave run --faults F`: what to do to which process, and when.
//
//   [{"at": {"step": 20, "phase": "backward", "micro_batch": 3} | {"time_s": 4.2},
//     "action": "kill" | "stop" | "slow:3" | "join",
//     "target": {"rank": 5} | {"role": "coordinator"}}, ...]
//
// at.step (0-based, < the run's steps) and at.phase name a point of a training step; the event
// fires when the target reaches it (for forward / backward, at micro-batch `micro_batch` of the
// step, any micro-batch the target runs when omitted; the target's first one if it runs none of
// that id, the event then fires at the phase's start). at.time_s fires that many seconds after
// the launcher started the job. Phases: forward, backward, reduce (the gradient all-reduce),
// commit (the commit vote), optimizer, snapshot, recover (during a recovery from an earlier
// fault: a double fault).
// Actions: kill = SIGKILL (kill -9) by the launcher; stop = SIGSTOP (a hang: only heartbeats
// catch it); slow:F = the target computes F times slower from then on (F in (1, 100]);
// join = a process with that world id (one killed by an earlier event) starts again and asks
// to join at the next step boundary.
// Targets: a worker by world id (< the job's processes) or the coordinator (kill and stop only).
//
// ParseFaultPlan refuses, with InvalidArgument naming the event index, the field, the value
// and what is allowed: malformed JSON, unknown keys, a step outside [0, steps), a phase or
// action not in the lists, micro_batch outside [0, M), a rank outside [0, processes), a
// coordinator target with slow/join, a join of a rank not killed before, and duplicate events
// (the same trigger and target twice). Events are returned in file order.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "elaswave/job_shape.h"

namespace tessera::elaswave {

enum class StepPhase { kForward, kBackward, kReduce, kCommit, kOptimizer, kSnapshot, kRecover };
std::string StepPhaseName(StepPhase p);

enum class FaultAction { kKill, kStop, kSlow, kJoin };
std::string FaultActionName(FaultAction a);

struct FaultEvent {
  bool at_time = false;  // true: at time_s; false: at (step, phase, micro_batch)
  double time_s = 0;
  int64_t step = 0;
  StepPhase phase = StepPhase::kForward;
  int64_t micro_batch = -1;  // -1: any
  FaultAction action = FaultAction::kKill;
  double slow_factor = 1;  // kSlow only
  bool target_coordinator = false;
  int target_rank = -1;          // a world id when !target_coordinator
  std::string Describe() const;  // "kill rank 5 at step 20 backward micro-batch 3"
};

core::StatusOr<std::vector<FaultEvent>> ParseFaultPlan(const core::Json& j,
                                                       const std::string& source,
                                                       const JobShape& shape, int64_t steps);
core::StatusOr<std::vector<FaultEvent>> LoadFaultPlan(const std::string& path,
                                                      const JobShape& shape, int64_t steps);
core::Json FaultPlanToJson(const std::vector<FaultEvent>& events);

}  // namespace tessera::elaswave

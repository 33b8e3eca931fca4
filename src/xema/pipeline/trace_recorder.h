// TraceRecorder: an AllocationObserver that records one request run through a DeviceAllocator
// (runtime/device_allocator.h; weights loaded, then ops bracketed by the pipeline) and folds it
// into a MemoryTrace (memory_trace.h): the prologue and epilogue ops as they ran, the ops of one
// denoising step stored once, every tensor with its alloc and free op, and each op's FLOPs, bytes
// and measured seconds (body ops: the mean over the steps).
//
// Folding rules (the recording must be a template, else Finish refuses it):
//   - every op's phase label is a Xema phase (text, denoise, vae);
//   - ops come in sections prologue*, body*, epilogue*; body ops carry steps 0, 1, ...,
//     steps - 1 in order, and every step has the same op names and phases;
//   - allocations outside ops must be weights (TensorKind::kWeight) made before the first op
//     and released (if at all) after the last, or inside an op of the request: a weight the
//     host tier parks while it is idle (offload.idle_weights) is not resident for the whole
//     request, so it is folded as a prologue activation (kind act) allocated at op 0 and freed
//     at the op it was parked in; every other tensor must be released by Finish;
//   - the allocations of every step match step 0's (names and bytes, in order); each body
//     tensor is freed in its own step, in the next step (free_next_step; the last step's
//     instance in the epilogue) or in the epilogue;
//   - a prologue tensor freed in the body records the step it was freed in (free_step).
// Finally the trace is expanded again and compared with the recording allocation by
// allocation (bytes, alloc op, free op), so a trace that Finish returns describes the run
// exactly: its LowerBoundBytes equals the allocator's peak_bytes() over the recording, and
// the k-th allocation of the run is instance k of Expand(trace).
//
// Thread-safety: like the allocator it observes (one thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/device_allocator.h"
#include "xema/memory_trace.h"

namespace tessera::xema {

class TraceRecorder final : public runtime::AllocationObserver {
 public:
  // Attaches to `allocator` (its first op and allocation must come after this).
  explicit TraceRecorder(runtime::DeviceAllocator& allocator);
  ~TraceRecorder() override;
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // Folds the recording into a trace with `key` (key.steps is set from the recording),
  // provenance "recorded". FailedPrecondition naming the op or tensor when the run is not a
  // template (see the file comment); Internal when the fold does not reproduce the run.
  core::StatusOr<MemoryTrace> Finish(const TraceKey& key) const;

  void OnAllocate(int64_t id, const std::string& name, TensorKind kind, int64_t bytes,
                  int64_t op) override;
  void OnRelease(int64_t id, int64_t op) override;
  void OnBeginOp(int64_t op, const runtime::OpInfo& info) override;
  void OnEndOp(int64_t op, double flops, double bytes) override;

 private:
  struct Op {
    runtime::OpInfo info;
    Phase phase = Phase::kDenoise;  // info.phase parsed (PhaseFromName)
    bool phase_known = true;        // info.phase names a Xema phase
    double flops = 0, bytes = 0, time_s = 0;
  };
  struct Alloc {
    std::string name;
    TensorKind kind = TensorKind::kActivation;
    int64_t bytes = 0;
    int64_t alloc_op = -1;  // flat op, -1 outside ops
    int64_t free_op = -1;   // flat op, -1 outside ops
    bool released = false;
    int64_t ops_before_alloc = 0;    // ops begun when it was allocated
    int64_t ops_before_release = 0;  // ops begun when it was released
  };
  // A weight loaded before the first op and released inside an op of the request (parked).
  static bool ParkedWeight(const Alloc& a);

  // Finish's phases, in order. Sections: prologue / body steps / epilogue of the flat ops.
  struct Sections;
  // Splits the ops into sections; FailedPrecondition when they do not run prologue, body of
  // equal steps, epilogue.
  core::StatusOr<Sections> FindSections() const;
  // Appends the template ops to t (body ops from step 0, with the mean time over the steps).
  void FoldOps(const Sections& sec, MemoryTrace* t) const;
  // The allocations that become template tensors (weights, then allocation order, body ones
  // from step 0 only); step_allocs[s]: the body allocations of step s, checked to repeat.
  core::StatusOr<std::vector<int64_t>> TemplateTensorOrder(
      const Sections& sec, std::vector<std::vector<int64_t>>* step_allocs) const;
  // Appends the template tensor of each allocation in `order` to t.
  core::Status AddTemplateTensors(const Sections& sec, const std::vector<int64_t>& order,
                                  const std::vector<std::vector<int64_t>>& step_allocs,
                                  MemoryTrace* t) const;
  // Internal unless t expands to the recorded allocations, each live over the same ops.
  core::Status CheckFoldReproducesRun(const MemoryTrace& t) const;

  runtime::DeviceAllocator& allocator_;
  int64_t first_id_ = 0;  // allocator ids and ops before the recorder attached are not ours
  int64_t first_op_ = 0;
  std::vector<Op> ops_;
  std::vector<Alloc> allocs_;  // by id - first_id_
  std::chrono::steady_clock::time_point op_start_;
};

}  // namespace tessera::xema

// Recording and checking a request template of the tiny diffusion pipeline for real:
//
// RecordRequest runs the request once under the plain heap allocator with a TraceRecorder
// attached (weights loaded first) and returns the template trace, the output frames and the
// peak the allocator measured. A request that offloads needs a host tier (host_tier.h); the
// tier's stats over the request (copies, exposed seconds) come back with it.
//
// Host memory: every run here allocates real memory, so it is bounded by `host_budget_bytes`
// (0: HostMemoryBudgetBytes()). A request whose MinimumPeakBytes exceeds it is refused before
// any work (Infeasible naming both figures); a run that reaches it stops with Infeasible (out
// of device memory), never the OOM killer.
//
// CheckTemplate is the end-to-end proof of Xema's memory layer on one template:
//   1. record (as above); the trace's lower bound (peak live bytes) must equal the measured
//      peak to the byte;
//   2. plan every static layout (tflite, tflm, xla; milp when the trace is small enough), and
//      run the request again for real inside an arena of exactly each layout's size
//      (LayoutDeviceAllocator); each run's output must equal the plain run's bitwise and the
//      run must not diverge from the trace;
//   3. run the request under each caching-allocator policy (CachingDeviceAllocator): output
//      bitwise equal, and the peak reserved equal to the replay of the trace (ReplayTrace), so
//      `xema allocsim` on a recorded trace predicts the real run.
// `ok` says whether all of it held; each row keeps its own figures and message.
//
// Progress: `progress` (may be empty) is called with (runs done, runs total) after each run.
// Thread-safety: reentrant; runs on the calling thread (GEMMs use the BLAS's threads).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/caching_allocator.h"
#include "xema/memory_trace.h"
#include "xema/pipeline/host_tier.h"
#include "xema/pipeline/tiny_pipeline.h"
#include "xema/static_layout.h"

namespace tessera::xema {

struct RecordedRequest {
  MemoryTrace trace;
  std::vector<float> output;  // OutputFloats: (frames, 3, height, width) per request
  int64_t measured_peak_bytes = 0;
  int64_t weight_bytes = 0;
  double run_s = 0;                 // wall-clock seconds of the request (weights loaded before)
  HostTierStats host;               // with a host tier: its copies during the request
  int64_t parked_weight_bytes = 0;  // weights left parked (idle_weights): the next request
                                    // restores them
  double restore_s = 0;             // that restore on the host link (no overlap: an upper bound)
};

// `spec` is the model (TinyModel, or ResolveTinyModel for a model file); request.model must
// be its name. InvalidArgument for a bad request; the pipeline's errors pass through.
// 80% of the memory available now (core::AvailableMemoryBytes), 0 when unknown: what real
// runs on this host may allocate, here and in the server.
int64_t HostMemoryBudgetBytes();

core::StatusOr<RecordedRequest> RecordRequest(const TinyModelSpec& spec,
                                              const DiffusionRequest& request,
                                              int64_t host_budget_bytes = 0,
                                              HostTier* host = nullptr);

// Like RecordRequest, on a pipeline already loaded (its weights resident in their own
// allocator, as a server keeps them): the request runs with a separate heap allocator for its
// activations (DiffusionPipeline::Run's `activations`) bounded by `activation_budget_bytes`
// (<= 0: HostMemoryBudgetBytes()), with a TraceRecorder on it. The trace holds the request's
// tensors only (weight_bytes 0) and measured_peak_bytes is their peak, so a layout of it is an
// activation arena. `host`: the pipeline's host tier for its stats, or null. Infeasible when
// the activations do not fit the budget (nothing leaked, the pipeline stays usable).
// `sp`: record this member's share of a sequence-parallel run (DiffusionPipeline::Run; the
// other members run at the same time; only member 0 has an output); the key's sp_degree is
// the group's size.
core::StatusOr<RecordedRequest> RecordActivations(DiffusionPipeline& pipeline,
                                                  const DiffusionRequest& request,
                                                  int64_t activation_budget_bytes,
                                                  HostTier* host = nullptr,
                                                  const SpMember* sp = nullptr);

struct LayoutRunRow {
  Layout layout;  // offsets included
  bool output_equal = false;
  double run_s = 0;
  std::string error;  // empty when the run completed without diverging
};

struct CachingRunRow {
  std::string policy;
  AllocatorStats stats;              // of the real run
  int64_t replay_peak_reserved = 0;  // ReplayTrace on the recorded trace
  bool output_equal = false;
  double run_s = 0;
  std::string error;
};

struct TemplateCheck {
  RecordedRequest recorded;
  int64_t lower_bound_bytes = 0;
  std::vector<LayoutRunRow> layouts;
  std::string layouts_skipped;  // why milp was skipped, if it was
  std::vector<CachingRunRow> caching;
  bool ok = false;
};

struct TemplateCheckOptions {
  LayoutOptions layout;
  std::vector<std::string> policies = {"pytorch", "pytorch:expandable_segments"};
  std::function<void(int, int)> progress;
  int64_t host_budget_bytes = 0;  // see RecordRequest
};

core::StatusOr<TemplateCheck> CheckTemplate(const TinyModelSpec& spec,
                                            const DiffusionRequest& request,
                                            const TemplateCheckOptions& options = {});

// {"trace", "measured_peak_bytes", "lower_bound_bytes", "weight_bytes", "plain_run_s",
//  "layouts": [SummaryJson + "output_equal", "run_s", "error"], "layouts_skipped",
//  "caching": [{"policy", "peak_reserved_bytes", "replay_peak_reserved_bytes",
//  "peak_allocated_bytes", "fragmentation", "output_equal", "run_s", "error"}], "ok"}
core::Json ToJson(const TemplateCheck& check);

}  // namespace tessera::xema

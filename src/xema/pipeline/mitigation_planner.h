// The mitigation planner for one request template of the tiny diffusion pipeline under a
// device budget: it records the real run, finds where live bytes exceed the budget, profiles
// every candidate mitigation for real (memory from its recorded trace, time from its ops),
// asks the mitigation MILP (xema/mitigation_milp.h) for the cheapest set that fits at every
// point, applies it, records the request again and verifies that the run fits. If the
// re-traced run does not fit (the MILP assumes savings add up), that combination is forbidden
// and the MILP asked again (at most max_retraces times).
//
// Actions and their options (option 0 is the request as given, "off"):
//   ffn_chunks       k in candidates.ffn_chunks          DiT block ops
//   attention_chunks k in candidates.attention_chunks    DiT block ops; only when the request's
//                                                        attention is kChunked (materialised)
//   vae              (frame slices s, tiles t) pairs     structural: the VAE's ops change, so
//                                                        its points are conditional rows
//   offload_text, offload_latent, offload_image, offload_weights   on / off, when a host tier
//                                                        is given (options.record handles it)
// Points: every flat op of the timeline (steps expanded to the request's count; each run is
// recorded with min(steps, profile_steps) steps, which holds every distinct step body).
// Non-structural options must keep the op sequence (checked: Internal otherwise); savings at a
// point = base live bytes - the option's live bytes. For each VAE option v the VAE points are
// those of v's own run; options that act in the VAE (offload_image, offload_weights) are
// re-recorded on top of v. Rows where live bytes cannot exceed the limit are dropped, identical
// rows (repeated steps) merged.
// Time: the base is measured twice (the first is the warm-up), then an option's added seconds
// = max(0, its run's time - the base run's time) over the phases it touches (denoise for DiT
// options, vae for VAE options, the whole run for offloads), each the minimum over `repeats`
// recordings, scaled to the request's steps; a run that leaves weights parked (idle weights)
// also pays their restore by the next request (RecordedRequest::restore_s, no overlap). Times
// closer than time_tolerance_fraction of the base run's time are not told apart (the MILP's stage 2
// then takes the weakest option): run-to-run spread on a busy host is a few percent.
//
// "Only as much as needed": excess = base peak - limit; saved = base peak - verified peak;
// granularity = the largest extra saving of a chosen option over the next weaker option of
// its action that is not slower (added time within the tolerance; its full saving when there
// is none, e.g. on/off actions); only_as_needed iff saved <= excess + granularity. A weaker
// option that costs more time is not counted: the MILP trades bytes for time, not the
// reverse.
//
// Errors: InvalidArgument for a bad request or budget (budget <= reserve); a base run that
// does not fit host memory passes Infeasible out. A request that cannot fit the budget with
// every candidate is not an error: plan.fits is false and shortfall_bytes says by how much.
// Progress: options.progress(done, total) after each recorded run. Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/mitigation_milp.h"
#include "xema/pipeline/template_check.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::xema {

struct MitigationCandidates {
  std::vector<int64_t> ffn_chunks = {2, 4, 8, 16};
  std::vector<int64_t> attention_chunks = {2, 4, 8, 16};
  std::vector<int64_t> vae_slices = {2, 4, 8};  // video only; capped at the frames
  std::vector<int64_t> vae_tiles = {2, 3, 4};
  bool offload = false;  // consider the offloads (needs a host tier: options.host or `record`)
  // With offload: the idle weights too. Not under a static arena, which holds the weights it
  // was loaded with (a layout replay needs them where the trace had them).
  bool offload_idle_weights = true;
};

// Records one run of `request` (the planner's only way to run the pipeline), e.g. with a host
// tier for offloads. Default: RecordRequest(spec, request, host_budget_bytes, host).
using RecordFn = std::function<core::StatusOr<RecordedRequest>(const DiffusionRequest&)>;

struct MitigationPlanOptions {
  int64_t budget_bytes = 0;   // device budget B, > reserve
  int64_t reserve_bytes = 0;  // workspace the trace does not show
  MitigationCandidates candidates;
  int profile_steps = 2;
  int repeats = 2;  // recordings per configuration for its time (memory is exact on one)
  int max_retraces = 4;
  double time_tolerance_fraction = 0.05;  // of the base run's time, in [0, 1]
  int64_t host_budget_bytes = 0;          // for the default recorder
  HostTier* host = nullptr;               // for the default recorder: needed by candidates.offload
  RecordFn record;                        // empty: the default
  std::function<void(int, int)> progress;
};

struct MitigationPlan {
  DiffusionRequest request;  // the input with the chosen mitigations applied
  MitigationProblem problem;
  MitigationChoice choice;
  std::vector<std::string> labels;  // chosen option per action, "off" ones included
  int64_t limit_bytes = 0;
  int64_t base_peak_bytes = 0;      // unmitigated run (weights included)
  int64_t excess_bytes = 0;         // max(0, base peak - limit)
  int64_t verified_peak_bytes = 0;  // the re-traced mitigated run
  int64_t saved_bytes = 0;
  int64_t granularity_bytes = 0;
  bool fits = false;            // verified peak <= limit
  bool only_as_needed = false;  // saved <= excess + granularity
  int64_t shortfall_bytes = 0;  // when nothing fits: the least excess the model found
  double base_s = 0;            // base run time (profile steps scaled to the request's)
  double mitigated_s = 0;       // the verified run, likewise
  int runs = 0;                 // recorded runs
  int retraces = 0;             // verifications that failed and were cut off
};

core::StatusOr<MitigationPlan> PlanMitigations(const TinyModelSpec& spec,
                                               const DiffusionRequest& request,
                                               const MitigationPlanOptions& options);

// Applies option `option` of each action of `problem` (as PlanMitigations built it) to `base`.
core::StatusOr<DiffusionRequest> ApplyChoice(const DiffusionRequest& base,
                                             const MitigationProblem& problem,
                                             const std::vector<int>& option);

// {"template": KeyOf fields, "limit_bytes", "base_peak_bytes", "excess_bytes",
//  "verified_peak_bytes", "saved_bytes", "granularity_bytes", "fits", "only_as_needed",
//  "shortfall_bytes", "base_s", "mitigated_s", "runs", "retraces", "rows",
//  "choice": ToJson(problem, choice), "request": {"ffn_chunks", "attention_chunks",
//  "vae_frame_slices", "vae_tiles", "offload": [names]}}
core::Json ToJson(const MitigationPlan& plan);

}  // namespace tessera::xema

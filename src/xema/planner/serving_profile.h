// Profiling for the offline planner of Xema part 3 (serving_planner.h): the options of a
// planning run and what the planner measures on this host before it searches.
//
// ProfileServing (real runs, each on one core, the core device 0 of the server uses): every
// model of the mix loaded once (weights W); the region R = B - W per device. Per template,
// the unmitigated request is recorded and laid out; when its arena fits max_concurrency times
// in R nothing else is profiled (no mitigation can help). Otherwise the part-2 mitigation
// planner profiles its mitigation options once (activations only, on the loaded pipeline;
// only the actions of the phases where the pressure intervals at that limit lie), at the
// strictest per-request limit R / max_concurrency; its MILP is then solved again for each
// concurrency c at the limit R / c (rows dropped at the strictest limit cannot bind at a
// looser one), giving the least-added-time mitigations for c requests in flight. Each
// distinct variant (and the unmitigated request) is recorded, laid out (tflite: its exact
// arena bytes) and timed from its arena (median of timing_runs after a warm-up): its solo
// seconds. The unmitigated solo time is the template's isolated latency, the SLO's base.
// With devices >= 2 (and max_sp_degree >= 2), every variant is also profiled sequence-parallel
// over d devices (d a power of two dividing the devices and the model's heads, at most one core
// each): recorded on d pipelines at once (one layout per member; its arena the largest
// member's) and timed on d threads pinned to the cores the server's devices 0 .. d-1 use.
// Batches: the unmitigated request (SP 1, no offload) is also recorded and timed as a run of
// k requests together (BatchTemplate) for k = 2 .. max_batch, while the largest arena over the
// batch sizes up to k fits the region: a variant of batch b per such b, its arena the largest
// of k = 1 .. b (a run takes whatever batch of up to b is waiting) and its batch_s measured.
// Processor sharing on one core is calibrated per template (its fastest variant that fits
// twice): two copies run in a loop at once on the core for a window; their aggregate speed-up
// f_aa = sum of solo / median run time while both ran (1: ideal sharing; less: cache
// thrashing). A mixed pair is modeled as sqrt(f_aa f_bb) (MeasurePairSpeedup measures any
// pair; the model was checked against measured mixed pairs: within 1-3.5%). Last, unless
// options.overhead_s is given, the server's own seconds per request are measured.
//
// Errors: InvalidArgument naming the option (an empty mix or a template in it twice, a rate
// <= 0, a budget the models' weights fill, concurrency out of [1, 16], batch out of [1, 4]).
// Progress: progress(stage, done, total). Thread-safety: reentrant; it pins a thread of its own to
// a core for the timed runs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "xema/serve/load_mix.h"
#include "xema/serve/loadgen.h"
#include "xema/serve/serve_device.h"

namespace tessera::xema {

struct ServingPlannerOptions {
  std::vector<LoadTemplate> mix;
  int64_t budget_bytes = 0;  // per device
  int devices = 1;
  double rate_rps = 1;
  double slo_scale = 5;
  double duration_s = 20;  // of the arrival trace scored
  uint64_t seed = 1;
  serve::ArrivalKind arrivals = serve::ArrivalKind::kPoisson;
  double cv = 1;
  int queue_capacity = 64;
  int max_concurrency = 3;
  int max_sp_degree = 64;            // modeled devices: the largest SP degree tried (this host: 1)
  int max_batch = kMaxRequestBatch;  // the largest batch tried ([1, kMaxRequestBatch])
  int timing_runs = 3;
  int64_t max_configurations = 20000;
  // Modeled comparisons only: the search may also leave a template out (its requests refused at
  // once, each a miss) when that serves more requests within their SLOs: admission control, as
  // an out-of-memory refusal does by accident. A left-out template is listed in `shed`; a server
  // given such a table would route its requests to the fallback.
  bool may_shed = false;
  // Seconds per request the server adds to a run (HTTP, parsing, routing), added to simulated
  // latencies; < 0: measured by ProfileServing (an in-process server answering requests of
  // the mix's first template one at a time: their median latency less the solo time).
  double overhead_s = -1;
  std::function<void(const std::string& stage, int done, int total)> progress;
};

struct TemplateVariant {
  DiffusionRequest request;  // with its mitigations
  std::vector<std::string> labels;
  int64_t arena_bytes = 0;  // per device it runs on
  double solo_s = 0;
  int sp_degree = 1;  // devices one request of it spans
  int batch = 1;      // the most requests one run of it takes together
  // [k - 1]: seconds of a run of a batch of k, k = 1 .. batch ([0] == solo_s).
  std::vector<double> batch_s;
};

struct TemplateProfile {
  std::string label;
  DiffusionRequest request;               // as the mix sends it
  std::vector<TemplateVariant> variants;  // [0]: unmitigated
  double isolated_s = 0;                  // variants[0].solo_s
  int mitigation_runs = 0;
};

struct ServingProfile {
  std::vector<TemplateProfile> templates;
  std::map<std::string, int64_t> weight_bytes;
  int64_t region_bytes = 0;
  std::vector<std::vector<double>> pair_speedup;  // per pair of templates (symmetric)
  double overhead_s = 0;                          // measured, or options.overhead_s when given
  int cpu = -1;                                   // the core the runs were timed on
  double profile_s = 0;                           // wall seconds of the profiling, of which:
  double templates_s = 0;       //   recording, mitigation profiling and timing the variants
  double pairs_s = 0;           //   the pair speed-ups
  double overhead_probe_s = 0;  //   the server-overhead probe
};

// InvalidArgument naming the first bad option (see the file comment).
core::Status ValidatePlannerOptions(const ServingPlannerOptions& options);

core::StatusOr<ServingProfile> ProfileServing(const ServingPlannerOptions& options);

// The load generator's options for the planned load (mix, rate, arrivals, cv, duration, seed,
// SLO scale): PlanArrivals of it gives the arrivals the planner scores and a real run sends.
LoadgenOptions PlannedLoad(const ServingPlannerOptions& options);

// The aggregate speed-up of two requests sharing one core, each looping from its own arena of
// its recorded layout for a window (at least 0.6 s) on `cpu` (-1: not pinned): the sum over
// the two of solo_s / their median run time while both ran.
core::StatusOr<double> MeasurePairSpeedup(DiffusionPipeline& pa, const DiffusionRequest& ra,
                                          const TemplatePlan& la, double solo_a,
                                          DiffusionPipeline& pb, const DiffusionRequest& rb,
                                          const TemplatePlan& lb, double solo_b, int cpu);

}  // namespace tessera::xema

// The offline planner of Xema part 3: for a device budget, a device count, a template mix, an
// arrival rate and an SLO scale, choose per template its memory control (mitigations from the
// part-2 planner, static arena) and its concurrency (requests of it in flight on one device),
// and write the serving plan table (xema/serve/serving_plan.h).
//
// 1. Profile (real runs on this host, each on one core, the core device 0 of the server uses):
//    every model of the mix loaded once (weights W); the region R = B - W per device. Per
//    template, the unmitigated request is recorded and laid out; when its arena fits
//    max_concurrency times in R nothing else is profiled (no mitigation can help). Otherwise
//    the part-2 mitigation planner profiles its mitigation options once (activations only,
//    on the loaded pipeline; only the actions of the phases where the pressure intervals at
//    that limit lie), at the
//    strictest per-request limit R / max_concurrency; its MILP is then solved again for each
//    concurrency c at the limit R / c (rows dropped at the strictest limit cannot bind at a
//    looser one), giving the least-added-time mitigations for c requests in flight. Each
//    distinct variant (and the unmitigated request) is recorded, laid out (tflite: its exact
//    arena bytes) and timed from its arena (median of timing_runs after a warm-up): its solo
//    seconds. The unmitigated solo time is the template's isolated latency, the SLO's base.
//    Processor sharing on one core is calibrated per template (its fastest variant that fits
//    twice): two copies run in a loop at once on the core for a window; their aggregate
//    speed-up f_aa = sum of solo / median run time while both ran (1: ideal sharing; less:
//    cache thrashing). A mixed pair is modeled as sqrt(f_aa f_bb) (MeasurePairSpeedup measures
//    any pair; the model was checked against measured mixed pairs: within 1-3.5%).
// 2. Candidates per template: (variant, c) with c x arena <= R (exact: the arena is the
//    recorded layout's), drop those dominated at the same c (another variant no larger and no
//    slower). A configuration takes one candidate per template.
// 3. Score every configuration (their product, at most max_configurations; beyond it, a
//    coordinate descent from the fastest candidates) with the serving simulation
//    (serving_sim.h) on the arrivals a load generator with these options sends (PlanArrivals:
//    the same times and templates); SLO attainment = requests served within slo_scale x
//    isolated latency / arrivals; ties by mean latency. The best becomes the plan table, with
//    each template's predicted p50 / p99 and attainment.
// EnumerateGrid and ScoreConfiguration expose steps 2-3 for the grid search (grid_search.h).
//
// Errors: InvalidArgument naming the option (an empty mix, a rate <= 0, a budget the models'
// weights fill or that no template fits, concurrency out of [1, 16]); one template that fits
// no candidate is not an error: it is left out of the table (its requests go to the
// fallback) and listed in `unplanned`. Progress: progress(stage, done, total). Thread-safety:
// reentrant; it pins a thread of its own to a core for the timed runs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/planner/serving_sim.h"
#include "xema/serve/load_mix.h"
#include "xema/serve/loadgen.h"
#include "xema/serve/serve_device.h"
#include "xema/serve/serving_plan.h"

namespace tessera::xema {

struct ServingPlannerOptions {
  std::vector<LoadTemplate> mix;
  int64_t budget_bytes = 0;  // per device
  int devices = 1;
  double rate_rps = 1;
  double slo_scale = 5;
  double duration_s = 20;  // of the arrival trace scored
  uint64_t seed = 1;
  ArrivalKind arrivals = ArrivalKind::kPoisson;
  double cv = 1;
  int queue_capacity = 64;
  int max_concurrency = 3;
  int timing_runs = 3;
  int64_t max_configurations = 20000;
  // Seconds per request the server adds to a run (HTTP, parsing, routing), added to simulated
  // latencies; < 0: measured by ProfileServing (an in-process server answering requests of
  // the mix's first template one at a time: their median latency less the solo time).
  double overhead_s = -1;
  std::function<void(const std::string& stage, int done, int total)> progress;
};

struct TemplateVariant {
  DiffusionRequest request;  // with its mitigations
  std::vector<std::string> labels;
  int64_t arena_bytes = 0;
  double solo_s = 0;
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

// Per template, the index of its variant and its concurrency.
struct Configuration {
  std::vector<int> variant;
  std::vector<int> concurrency;
};

struct ConfigurationScore {
  bool feasible = false;  // every template's arena x concurrency fits the region
  double attainment = 0;
  double mean_latency_s = 0;
  double p50_s = 0, p99_s = 0;  // of served requests
  std::vector<double> template_p50_s, template_p99_s, template_attainment;
  int64_t rejected = 0, unserved = 0;
};

// Every (variant, concurrency) per template, their product (feasible or not), in a fixed order.
std::vector<Configuration> EnumerateGrid(const ServingProfile& profile, int max_concurrency);
bool Feasible(const ServingProfile& profile, const Configuration& c);
// The serving plan table of `config` (scored or not).
ServingPlan MakeServingPlan(const ServingProfile& profile, const ServingPlannerOptions& options,
                            const Configuration& config, const ConfigurationScore& score);
core::StatusOr<ConfigurationScore> ScoreConfiguration(const ServingProfile& profile,
                                                      const ServingPlannerOptions& options,
                                                      const std::vector<PlannedArrival>& arrivals,
                                                      const Configuration& config);
// "t0: tiles=2 c=2; t1: off c=1"
std::string ConfigurationLabel(const ServingProfile& profile, const Configuration& c);

struct ServingPlannerResult {
  ServingPlan plan;
  Configuration chosen;
  ConfigurationScore score;
  int64_t candidates = 0;  // (variant, c) pairs over the templates
  int64_t infeasible = 0;  // pruned exactly from the arenas
  int64_t dominated = 0;
  int64_t simulated = 0;               // configurations scored
  std::vector<std::string> unplanned;  // templates with no feasible candidate
  double search_s = 0;
};

core::StatusOr<ServingPlannerResult> PlanServing(const ServingProfile& profile,
                                                 const ServingPlannerOptions& options);

}  // namespace tessera::xema

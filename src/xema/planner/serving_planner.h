// The offline planner of Xema part 3: for a device budget, a device count, a template mix, an
// arrival rate and an SLO scale, choose per template its memory control (mitigations from the
// part-2 planner, static arena) and its concurrency (requests of it in flight on one device),
// and write the serving plan table (xema/serve/serving_plan.h).
//
// 1. Profile the templates on this host (serving_profile.h): variants with their exact arena
//    bytes and solo seconds, the isolated latencies, the pair speed-ups of a shared core.
// 2. Candidates per template: (variant, c) with c x arena <= R (exact: the arena is the
//    recorded layout's), drop those dominated at the same c (another variant of the same batch
//    no larger, no slower, on no more devices: SP degree). A variant of batch b runs up to b
//    waiting requests of its template together in each of its c slots. A variant of SP degree d
//    runs each request on the d devices of a replica group (devices / d groups). A configuration
//    takes one candidate per template.
// 3. Score every configuration (their product, at most max_configurations; beyond it, a
//    the batch-1 candidates' product, or a coordinate descent from the fastest of them, then a
//    coordinate descent over every candidate from the best) with the serving simulation
//    (serving_sim.h) on the arrivals a load generator with these options sends (PlanArrivals:
//    the same times and templates); SLO attainment = requests served within slo_scale x
//    isolated latency / arrivals; ties by mean latency. The best becomes the plan table, with
//    each template's predicted p50 / p99 and attainment.
// EnumerateGrid and ScoreConfiguration expose steps 2-3 for the grid search (grid_search.h).
//
// Errors: InvalidArgument naming the option (an empty mix, a rate <= 0, a budget the models'
// weights fill, concurrency out of [1, 16]); Infeasible "budget: ..." when no template of the
// mix fits beside the weights; one template that fits
// no candidate is not an error: it is left out of the table (its requests go to the
// fallback) and listed in `unplanned`. Progress: progress(stage, done, total). Thread-safety:
// reentrant; it pins a thread of its own to a core for the timed runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/planner/serving_profile.h"
#include "xema/planner/serving_sim.h"
#include "xema/serve/loadgen.h"
#include "xema/serve/serving_plan.h"

namespace tessera::xema {

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
  int64_t left_out = 0;  // arrivals of templates the configuration does not plan
};

// a better than b: feasible first, then higher attainment, then fewer arrivals left out, then
// lower mean latency.
bool BetterScore(const ConfigurationScore& a, const ConfigurationScore& b);

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
  std::vector<std::string> shed;       // templates left out by choice (options.may_shed)
  double search_s = 0;
};

core::StatusOr<ServingPlannerResult> PlanServing(const ServingProfile& profile,
                                                 const ServingPlannerOptions& options);

}  // namespace tessera::xema

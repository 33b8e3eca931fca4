// The grid search the planner is checked against (Xema part 3): every configuration of the
// planner's space (per template: each profiled variant x concurrency 1..max_concurrency),
// each served for real by an in-process server under its plan table (xema/serve/server.h)
// with the load generator's arrivals (the same seed, rate and duration at every point; the
// SLO of template t is slo_scale x its profiled isolated latency), measured: SLO attainment,
// p50 / p99 latency (client side, served requests). Beside each, the serving simulation's
// prediction for the same configuration.
//
// Configurations whose arenas exceed the budget (the planner prunes them exactly) are not
// served: they count as 0 attainment and 0 seconds of grid time (a grid searcher would spend at
// least a server start on each: the time ratio below is the grid's least).
// Report: grid seconds (the sum of the served points' wall time), the measured best, the
// planner's choice among the points and its regret (best attainment - chosen's, in points),
// and the simulation's MAPE on p50 and p99 over the served points.
// Errors: a server or load generator failure passes out with the configuration named.
// Progress: progress(done, total, label) before each served point. Thread-safety: reentrant.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/planner/serving_planner.h"

namespace tessera::xema {

struct GridPoint {
  Configuration config;
  std::string label;
  bool feasible = false;
  ConfigurationScore predicted;
  // Measured (feasible points only).
  double attainment = 0, p50_s = 0, p99_s = 0;
  int64_t planned = 0, completed = 0;
  double wall_s = 0;
};

struct GridReport {
  std::vector<GridPoint> points;
  int best = -1;    // the highest measured attainment (ties: lower measured mean of p50)
  int chosen = -1;  // the planner's configuration
  double grid_s = 0;
  double p50_mape = 0, p99_mape = 0;  // fractions, over the served points
  double regret_points = 0;           // 100 x (best - chosen attainment)
  int served = 0;
};

struct GridOptions {
  bool real = true;  // false: only the simulation of every point (xema plan --grid sim)
  std::function<void(int done, int total, const std::string& label)> progress;
};

core::StatusOr<GridReport> RunGrid(const ServingProfile& profile,
                                   const ServingPlannerOptions& options,
                                   const Configuration& chosen, const GridOptions& grid);

core::Json ToJson(const GridReport& report, const ServingProfile& profile);

}  // namespace tessera::xema

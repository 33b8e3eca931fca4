// The figures of an overlap bench (overlap_bench.h), computed from its measured medians:
//  - ratios between strategies per configuration (the first strategy's time over the second's,
//    > 1: the second is faster), summarised over a subset as min / median / max;
//    "communication-bound" configurations are those whose modeled single-ring collective
//    takes longer than the profiled GEMM;
//  - the degree model (degree_model.h) on every configuration with decomp:D measured at
//    d in {1, 2, 4, 8} (fit) and over all feasible D <= 16 (exhaustive best): the regret of the
//    fitted d* (T(d*) / T(best) - 1), the gain of d* over TE's D = 4 (T(4) / T(d*));
//    (d* chosen among the fitted degrees, degree_model.h);
//  - the class model: alpha, delta and kappa fitted per operator class (AG-type, RS) on the even-
//    numbered configurations, predicting T(d) of the odd-numbered ones from their profiled GEMM
//    and modeled collective times: the mean absolute percentage error on those held-out shapes;
//  - the pipeline model (degree_model.h PipelineModel: each part's profiled GEMM and modeled
//    collective), fitted and scored the same way, and the regret of its d* (the feasible d of
//    lowest predicted T) on every configuration.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "compass/degree_model.h"
#include "compass/engine/overlap_bench.h"
#include "compass/strategy_model.h"
#include "core/json_util.h"
#include "core/stats.h"

namespace tessera::compass {

using RatioStats = core::MinMedianMax;

struct DegreeRow {
  std::string label;
  int d_fit = 0;                // fitted d* moved to a feasible neighbour
  int d_best = 0;               // exhaustive best measured
  double regret = 0;            // T(d_fit) / T(d_best) - 1
  double gain_vs_d4 = 0;        // T(4) / T(d_fit); 0 when 4 is infeasible
  bool held_out = false;        // odd-numbered: scored by the class model
  double class_mape = -1;       // mean |pred - meas| / meas over its measured d (held out only)
  int d_pipeline = 0;           // the pipeline model's d* (0: no model for its class)
  double pipeline_regret = -1;  // T(d_pipeline) / T(d_best) - 1
  double pipeline_mape = -1;    // as class_mape, for the pipeline model (held out only)
};

struct OverlapSummary {
  // time(a) / time(b) over all configurations and over communication-bound ones.
  std::map<std::string, RatioStats> ratios;  // key "a/b" or "a/b comm-bound"
  std::vector<DegreeRow> degree;
  double regret_median = 0, regret_p95 = 0, max_gain_vs_d4 = 0;
  double class_mape = -1;  // over held-out configurations (-1: not enough data)
  // class ("ag", "rs") -> alpha s, delta s, kappa.
  std::map<std::string, std::array<double, 3>> class_params;
  double pipeline_mape = -1;  // over held-out configurations (-1: not enough data)
  double pipeline_regret_median = -1, pipeline_regret_p95 = -1;
  std::map<std::string, std::array<double, 3>> pipeline_params;
};

// The timed decomp:D runs of a configuration: measured device seconds by D.
std::map<int, double> DecompositionTimes(const OverlapConfigResult& c);
// The same runs as pipeline-model samples (those with a profiled GEMM and a modeled part).
std::vector<PipelineSample> PipelineSamplesOf(const OverlapConfigResult& c);
// The same runs as closed-form class samples (the whole GEMM and modeled collective, d, T).
std::vector<DegreeSample> DegreeSamplesOf(const OverlapConfigResult& c);

// Ratios reported: none/fused-ring1, none/fused-ring2, none/fused-direct, none/te,
// fused-ring1/fused-ring2, fused-direct/fused-ring2, none/best (best overlapped strategy per
// configuration), each also over the communication-bound subset.
OverlapSummary SummarizeOverlap(const OverlapBench& b);

core::Json ToJson(const OverlapSummary& s);

}  // namespace tessera::compass

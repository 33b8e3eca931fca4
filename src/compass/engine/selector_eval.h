// The selector against measurements (Compass part 3): strategy-model inputs from an overlap
// bench's results, the overhead fits, and the selector's score against measured ground truth.
//
// Scoring one bench (overlap_bench.h) that measured none, the fused strategies and decomp:D:
//  - overheads (strategy_model.h) are fitted per family and operator class on the
//    even-numbered configurations (FitOverheadTable);
//  - on every odd-numbered (held-out) configuration the selector (selector.h) picks from the
//    configuration's profiled GEMM times and modeled collectives alone; the measured best is
//    the fastest measured candidate (none, fused-ring1, fused-ring2, fused-direct, decomp:D);
//  - a pick is right when its measured time is within tolerance = max(2%, 2 x spread) of the
//    measured best (spread: the best's half_spread, how far the median of half the runs
//    moves), strictly right when it is the measured best, a regression when it is measured
//    slower than none by more than the tolerance; also scored with the looser run-CV
//    tolerance max(2%, 2 x the best's run CV) (right_cv);
//  - the model's error: every measured candidate's prediction on the held-out configurations
//    against its measured median (MAPE per family and over all).
// Rows for the even (training) configurations are scored too and marked, not counted.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compass/engine/overlap_bench.h"
#include "compass/selector.h"
#include "compass/strategy_model.h"
#include "core/json_util.h"

namespace tessera::compass {

// The model's inputs for one measured configuration: its profiled whole GEMM, the modeled
// collective per algorithm, and per decomp:D run one part's profiled GEMM and modeled
// collective.
StrategyInputs StrategyInputsOf(const OverlapConfigResult& c);

// Overheads per (family, class) fitted on the timed runs of `configs` (families with fewer
// than 3 samples in a class are left out: zero overheads).
core::StatusOr<OverheadTable> FitOverheadTable(
    const std::vector<const OverlapConfigResult*>& configs);

struct SelectorRow {
  std::string label;
  bool held_out = false;
  std::string pick, best;  // the selector's pick; the measured best candidate
  double predicted_s = 0;
  double pick_s = 0, best_s = 0, none_s = 0;  // measured medians
  double tolerance = 0;
  bool right = false, strict = false, regression = false;
  double tolerance_cv = 0;  // max(2%, 2 x the best's run CV)
  bool right_cv = false;
};

struct SelectorEvaluation {
  OverheadTable overheads;
  std::vector<SelectorRow> rows;
  int held_out = 0, right = 0, strict = 0, regressions = 0;  // over held-out rows
  int right_cv = 0;
  // Mean |predicted - measured| / measured of every measured candidate on the held-out
  // configurations, per family and over all.
  std::map<std::string, double> family_mape;
  double mape = 0;
  double top1() const { return held_out > 0 ? static_cast<double>(right) / held_out : 0; }
  double strict_top1() const { return held_out > 0 ? static_cast<double>(strict) / held_out : 0; }
  double top1_cv() const { return held_out > 0 ? static_cast<double>(right_cv) / held_out : 0; }
};

// InvalidArgument when fewer than 2 configurations carry the candidates' measurements.
core::StatusOr<SelectorEvaluation> EvaluateSelector(const OverlapBench& b,
                                                    const SelectorOptions& options = {});

core::Json ToJson(const SelectorEvaluation& e);

}  // namespace tessera::compass

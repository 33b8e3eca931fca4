// The unified strategy model (Compass part 3): the predicted device time of every overlap
// strategy on one TP operator, from what does not need the strategy to run: the GEMM's
// profiled (or modeled) time, whole, per rank block and per decomposition part, and the
// collective's modeled time per algorithm (collective_model.h). Each strategy is a two-stage
// pipeline of communication steps and GEMM chunks, with three overheads per strategy family
// and operator class: alpha (per communication stage), delta (per GEMM chunk) and kappa (the
// slow-down of compute that overlaps communication, >= 1):
//  - none: Tm + Tc (collective, then GEMM; GEMM then collective for RS);
//  - fused-ring1 / fused-ring2 / fused-direct on n ranks: n block stages; AllGather and wgrad:
//    block 0 (the rank's own) is computed at once, block s arrives at s (Tm_algo / (n-1) +
//    alpha) and is computed (Tc / n + delta, kappa x while blocks are still arriving) when it
//    has arrived and the previous one is done; ReduceScatter: block s's partial is computed,
//    then sent once the previous send is done (n-1 sends), the own block last;
//  - decomp:d: T = a + b + (d-1) max(kappa a, b), a = g_d + delta, b = m_d + alpha
//    (degree_model.h PipelineModel; g_d one part's GEMM, m_d one part's single-ring
//    collective);
//  - te: fused-ring1 for AllGather, decomp:4 (or the largest feasible degree below) for
//    ReduceScatter, none for wgrad (strategy_te.cc), with those families' overheads.
// Overheads come from a fit (FitStrategyOverheads) on measured runs of training operators.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "comm/link_algo.h"
#include "compass/degree_model.h"
#include "compass/strategy_name.h"
#include "compass/tp_op.h"
#include "core/json_util.h"
#include "core/status.h"

namespace tessera::compass {

// What the model knows about one operator (device seconds).
struct StrategyInputs {
  TpOpKind kind = TpOpKind::kAllGatherGemm;
  int tp = 2;
  double gemm_s = 0;                        // the whole GEMM on one rank
  std::map<comm::LinkAlgo, double> coll_s;  // the whole collective, modeled, per algorithm
  std::map<int, double> part_gemm_s;        // decomposition degree -> one part's GEMM
  std::map<int, double> part_coll_s;        // degree -> one part's single-ring collective
};

// alpha, delta, kappa (degree_model.h's PipelineModel, which also predicts decomp:d).
using Overheads = PipelineModel;

// "ag" (AllGather and wgrad) or "rs".
const char* OperatorClassOf(TpOpKind kind);

// A fitted family (FittedStrategyFamilies) and an operator class ("ag" or "rs"). Ordered by
// the family's name, then the class: the order the profile file and its table list them.
struct OverheadKey {
  StrategyFamily family = StrategyFamily::kNone;
  std::string op_class;
  bool operator<(const OverheadKey& o) const;
};
// Overheads per (family, class), e.g. {kFusedRing2, "ag"}.
using OverheadTable = std::map<OverheadKey, Overheads>;

// {family: {class: {"alpha_s", "delta_s", "kappa"}}}: the profile file's "overheads".
core::Json ToJson(const OverheadTable& t);

// Predicted time of `strategy` (none, fused-ring1, fused-ring2, fused-direct, decomp:D, te)
// with `table`'s overheads (a missing entry: zero overheads, kappa 1). InvalidArgument for a
// strategy the model does not predict (mpi) or a degree/algorithm missing from the inputs.
core::StatusOr<double> PredictStrategy(const StrategyName& strategy, const StrategyInputs& in,
                                       const OverheadTable& table);

// The same for one fitted family with explicit overheads (the fit's inner loop); `degree` is
// D for kDecomp (ignored otherwise).
core::StatusOr<double> PredictFamily(StrategyFamily family, int degree, const StrategyInputs& in,
                                     const Overheads& o);

struct StrategySample {
  const StrategyInputs* inputs = nullptr;
  StrategyFamily family = StrategyFamily::kNone;
  int degree = 0;  // decomp only
  double t_s = 0;  // measured
};
// alpha, delta, kappa in [1, 3] minimising the squared relative error of PredictFamily over
// samples of one family and class: a grid, then a pattern search from its best point.
// For `none` only alpha + delta matters: it is returned as alpha, with delta 0 and kappa 1.
// InvalidArgument with fewer than 3 samples, mixed families, or a sample the model cannot
// predict.
core::StatusOr<Overheads> FitOverheads(const std::vector<StrategySample>& samples);

}  // namespace tessera::compass

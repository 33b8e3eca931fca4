// The decomposition degree model (Compass's ODP): an operator split into d parts runs as a
// two-stage pipeline. With Tc the whole GEMM's time, Tm the whole collective's, a part's
// compute a = Tc/d + delta and communication b = Tm/d + alpha (delta, alpha: per-part costs:
// launch, lower GEMM efficiency on a thinner part, per-message latency and synchronisation),
//     T(d) = a + b + (d - 1) max(a, b),
// which for a compute-bound operator (a >= b) is T(d) = delta d + (Tc + alpha) + Tm / d and for
// a communication-bound one T(d) = alpha d + (Tm + delta) + Tc / d: both are
//     T(d) = A d + B + C / d,   minimised at d* = sqrt(C / A).
// d must divide the split length, so d* moves to the feasible neighbour (the largest feasible
// d <= d* or the smallest >= d*) with the lower predicted T.
// Overlapped compute slows by a contention factor kappa >= 1 (the rank's core also serves the
// collective's thread and copies; FiCCO's kappa): with the overlapped parts' compute kappa a,
// a compute-bound operator (kappa Tc >= Tm) gives
//     A = kappa delta,  B = kappa Tc + alpha + (1 - kappa) delta,  C = Tm + (1 - kappa) Tc
// and a communication-bound one is unchanged (A = alpha, B = Tm + delta, C = Tc).
// Two ways to get A, B, C (docs/compass.md):
//  - FitDegreeModel: least squares on measured T(d) of one operator (d in {1, 2, 4, 8});
//    its d* is only chosen among the degrees it was fitted between (ChooseDegree's max_d):
//    the curve beyond them is an extrapolation the samples cannot check;
//  - DegreeClassModel: alpha and delta fitted per operator class on training shapes, then
//    A, B, C of a new shape from its profiled Tc and modeled Tm (AnalyticDegreeFit).
// A third form keeps the pipeline's max and takes each part's GEMM from the profile instead
// of Tc/d + delta, so a thin part's lower GEMM efficiency is measured, not assumed linear:
//    T(d) = a + b + (d - 1) max(kappa a, b),  a = g_d + delta,  b = m_d + alpha
// with g_d the part's profiled GEMM and m_d its modeled collective (PipelineModel); d* is the
// feasible d of lowest predicted T.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "core/status.h"

namespace tessera::compass {

struct DegreeFit {
  double a = 0, b = 0, c = 0;
  double Predict(double d) const { return a * d + b + c / d; }
};

// Least squares over (d, T) samples with at least 3 distinct d >= 1; InvalidArgument otherwise.
core::StatusOr<DegreeFit> FitDegreeModel(const std::vector<std::pair<int, double>>& samples);

// d* moved to a feasible neighbour (`feasible`: non-empty, any order) among those <= max_d
// (all when none is). A <= 0: the largest such d (the per-part cost is free); C <= 0: the
// smallest.
int ChooseDegree(const DegreeFit& fit, const std::vector<int>& feasible,
                 int max_d = std::numeric_limits<int>::max());

// One operator's choice from its measured decomp:D times (by D): the fit on d in {1, 2, 4, 8}
// and d* among the measured degrees up to the largest fitted one. FitDegreeModel's errors.
struct OperatorDegreeChoice {
  DegreeFit fit;
  int d_star = 1;
};
core::StatusOr<OperatorDegreeChoice> FitAndChooseDegree(const std::map<int, double>& t_by_d);

// A, B, C of the pipeline form from Tc, Tm, the per-part costs and the contention factor.
DegreeFit AnalyticDegreeFit(double tc_s, double tm_s, double alpha_s, double delta_s,
                            double kappa = 1.0);

struct DegreeSample {
  double tc_s = 0, tm_s = 0;  // whole GEMM, whole collective
  int d = 1;
  double t_s = 0;  // measured T(d)
};
struct DegreeClassModel {
  double alpha_s = 0, delta_s = 0, kappa = 1;
};
// alpha and delta by least squares over samples of one operator class (each sample's regime
// from kappa tc vs tm), for every kappa in [1, 3] in steps of 0.01; the kappa whose fit has
// the smallest sum of squared relative errors wins. InvalidArgument with fewer than 2 samples
// or a singular system.
core::StatusOr<DegreeClassModel> FitDegreeClass(const std::vector<DegreeSample>& samples);

struct PipelineModel {
  double alpha_s = 0, delta_s = 0, kappa = 1;
  // T(d) from one part's profiled GEMM and modeled collective; +inf when a part's compute or
  // communication time would be <= 0.
  double Predict(double part_gemm_s, double part_collective_s, int d) const;
};
struct PipelineSample {
  double part_gemm_s = 0, part_collective_s = 0;
  int d = 1;
  double t_s = 0;  // measured T(d)
};
// alpha, delta and kappa (in [1, 3]) minimising the sum of squared relative errors over the
// samples of one operator class: a grid over the three, then a pattern search from its best
// point. InvalidArgument with fewer than 3 samples or a sample with t_s <= 0.
core::StatusOr<PipelineModel> FitPipelineModel(const std::vector<PipelineSample>& samples);

// The search FitPipelineModel runs, for any error function of (alpha, delta, kappa): a grid
// over alpha in [0, 2 unit], delta in [-unit, unit] (steps of unit / 10), kappa in [1, 3]
// (steps of 0.1), then a pattern search from its best point down to steps of 1e-5 unit.
// `unit`: a typical time of the samples. Writes the best error to `best_error` when given.
PipelineModel MinimisePipelineParams(const std::function<double(const PipelineModel&)>& error,
                                     double unit, double* best_error = nullptr);

}  // namespace tessera::compass

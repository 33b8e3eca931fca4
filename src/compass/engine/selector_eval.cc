#include "compass/engine/selector_eval.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "compass/engine/overlap_summary.h"
#include "core/stats.h"

namespace tessera::compass {

namespace {

// A selector candidate: a strategy of one of the model's families (not te, not mpi).
bool IsCandidate(const OverlapRun& r) {
  const std::optional<StrategyName> id = StrategyOf(r);
  return id && IsFittedFamily(id->family);
}

}  // namespace

StrategyInputs StrategyInputsOf(const OverlapConfigResult& c) {
  StrategyInputs in;
  in.kind = c.shape.kind;
  in.tp = c.shape.tp;
  in.gemm_s = c.gemm_s;
  in.coll_s = c.modeled_collective_by_algo;
  if (in.coll_s.empty() && c.modeled_collective_s > 0) {
    in.coll_s[comm::LinkAlgo::kRing1] = c.modeled_collective_s;
  }
  for (const OverlapRun& r : c.runs) {
    if (r.degree > 0 && r.compute_s > 0 && r.part_collective_s > 0) {
      in.part_gemm_s[r.degree] = r.compute_s / r.degree;
      in.part_coll_s[r.degree] = r.part_collective_s;
    }
  }
  return in;
}

core::StatusOr<OverheadTable> FitOverheadTable(
    const std::vector<const OverlapConfigResult*>& configs) {
  std::vector<StrategyInputs> inputs;
  inputs.reserve(configs.size());
  for (const OverlapConfigResult* c : configs) inputs.push_back(StrategyInputsOf(*c));
  std::map<OverheadKey, std::vector<StrategySample>> samples;
  for (size_t i = 0; i < configs.size(); ++i) {
    for (const OverlapRun& r : configs[i]->runs) {
      if (!r.timed || !(r.median_s > 0) || !IsCandidate(r)) continue;
      const StrategyFamily family = StrategyOf(r)->family;
      samples[{family, OperatorClassOf(configs[i]->shape.kind)}].push_back(
          {&inputs[i], family, r.degree, r.median_s});
    }
  }
  OverheadTable table;
  for (const auto& [key, s] : samples) {
    if (s.size() < 3) continue;
    ASSIGN_OR_RETURN(table[key], FitOverheads(s));
  }
  return table;
}

core::StatusOr<SelectorEvaluation> EvaluateSelector(const OverlapBench& b,
                                                    const SelectorOptions& options) {
  std::vector<const OverlapConfigResult*> train;
  for (size_t i = 0; i < b.configs.size(); i += 2) train.push_back(&b.configs[i]);
  SelectorEvaluation e;
  ASSIGN_OR_RETURN(e.overheads, FitOverheadTable(train));
  int scored = 0;
  std::map<std::string, std::vector<double>> errors;
  for (size_t i = 0; i < b.configs.size(); ++i) {
    const OverlapConfigResult& c = b.configs[i];
    const OverlapRun* none = c.Find(StrategyFamilyName(StrategyFamily::kNone));
    const OverlapRun* best = nullptr;
    for (const OverlapRun& r : c.runs) {
      if (!r.timed || !(r.median_s > 0) || !IsCandidate(r)) continue;
      if (best == nullptr || r.median_s < best->median_s) best = &r;
    }
    if (none == nullptr || !none->timed || best == nullptr) continue;
    const StrategyInputs in = StrategyInputsOf(c);
    ASSIGN_OR_RETURN(StrategyPick pick, SelectStrategy(in, e.overheads, options));
    if (i % 2 == 1) {
      for (const OverlapRun& r : c.runs) {
        if (!r.timed || !(r.median_s > 0) || !IsCandidate(r)) continue;
        const StrategyName id = *StrategyOf(r);
        auto p = PredictStrategy(id, in, e.overheads);
        if (!p.ok()) continue;
        errors[StrategyFamilyName(id.family)].push_back(std::fabs(*p - r.median_s) / r.median_s);
      }
    }
    const OverlapRun* picked = c.Find(pick.strategy.Name());
    if (picked == nullptr || !picked->timed) continue;  // a pick the bench did not measure
    SelectorRow row;
    row.label = c.shape.label;
    row.held_out = i % 2 == 1;
    row.pick = pick.strategy.Name();
    row.best = best->strategy;
    row.predicted_s = pick.predicted_s;
    row.pick_s = picked->median_s;
    row.best_s = best->median_s;
    row.none_s = none->median_s;
    row.tolerance = std::max(0.02, 2 * best->half_spread);
    row.right = row.pick_s <= row.best_s * (1 + row.tolerance);
    row.strict = row.pick == row.best;
    row.tolerance_cv = std::max(0.02, 2 * best->cv);
    row.right_cv = row.pick_s <= row.best_s * (1 + row.tolerance_cv);
    row.regression = row.pick_s > row.none_s * (1 + row.tolerance);
    ++scored;
    if (row.held_out) {
      ++e.held_out;
      e.right += row.right ? 1 : 0;
      e.strict += row.strict ? 1 : 0;
      e.right_cv += row.right_cv ? 1 : 0;
      e.regressions += row.regression ? 1 : 0;
    }
    e.rows.push_back(row);
  }
  std::vector<double> all;
  for (const auto& [family, v] : errors) {
    e.family_mape[family] = core::Mean(v);
    all.insert(all.end(), v.begin(), v.end());
  }
  if (!all.empty()) e.mape = core::Mean(all);
  if (scored < 2) {
    return core::InvalidArgument(
        "selector evaluation: fewer than 2 configurations measured none and the candidates");
  }
  return e;
}

core::Json ToJson(const SelectorEvaluation& e) {
  core::Json rows = core::Json::array();
  for (const SelectorRow& r : e.rows) {
    rows.push_back({{"label", r.label},
                    {"held_out", r.held_out},
                    {"pick", r.pick},
                    {"measured_best", r.best},
                    {"predicted_s", r.predicted_s},
                    {"pick_measured_s", r.pick_s},
                    {"best_measured_s", r.best_s},
                    {"none_measured_s", r.none_s},
                    {"tolerance", r.tolerance},
                    {"right", r.right},
                    {"strict", r.strict},
                    {"regression", r.regression},
                    {"tolerance_cv", r.tolerance_cv},
                    {"right_cv", r.right_cv}});
  }
  return {{"overheads", ToJson(e.overheads)},
          {"held_out", e.held_out},
          {"top1", e.top1()},
          {"strict_top1", e.strict_top1()},
          {"top1_run_cv_tolerance", e.top1_cv()},
          {"regressions", e.regressions},
          {"model_mape_held_out", e.mape},
          {"model_mape_held_out_by_family", e.family_mape},
          {"rows", rows}};
}

}  // namespace tessera::compass

#include "compass/engine/overlap_summary.h"

#include <algorithm>
#include <cmath>

#include "compass/degree_model.h"
#include "core/stats.h"

namespace tessera::compass {

namespace {

double Time(const OverlapConfigResult& c, const std::string& name) {
  const OverlapRun* r = c.Find(name);
  return r != nullptr && r->timed && r->median_s > 0 ? r->median_s : 0;
}

bool CommBound(const OverlapConfigResult& c) { return c.modeled_collective_s > c.gemm_s; }

bool IsTimedDecomposition(const OverlapRun& r) {
  const std::optional<StrategyName> id = StrategyOf(r);
  return r.degree > 0 && r.timed && r.median_s > 0 && id && id->family == StrategyFamily::kDecomp;
}

}  // namespace

std::map<int, double> DecompositionTimes(const OverlapConfigResult& c) {
  std::map<int, double> out;
  for (const OverlapRun& r : c.runs)
    if (IsTimedDecomposition(r)) out[r.degree] = r.median_s;
  return out;
}

std::vector<PipelineSample> PipelineSamplesOf(const OverlapConfigResult& c) {
  std::vector<PipelineSample> out;
  for (const OverlapRun& r : c.runs) {
    if (IsTimedDecomposition(r) && r.compute_s > 0 && r.part_collective_s > 0) {
      out.push_back({r.compute_s / r.degree, r.part_collective_s, r.degree, r.median_s});
    }
  }
  return out;
}

std::vector<DegreeSample> DegreeSamplesOf(const OverlapConfigResult& c) {
  std::vector<DegreeSample> out;
  for (const auto& [d, t] : DecompositionTimes(c)) {
    out.push_back({c.gemm_s, c.modeled_collective_s, d, t});
  }
  return out;
}

namespace {

// Each strategy pair's time ratio over the configurations (and the communication-bound ones),
// and none over the best timed strategy.
void AddRatios(const OverlapBench& b, OverlapSummary* out) {
  using F = StrategyFamily;
  const std::vector<std::pair<F, F>> family_pairs = {
      {F::kNone, F::kFusedRing1},       {F::kNone, F::kFusedRing2},
      {F::kNone, F::kFusedDirect},      {F::kNone, F::kTe},
      {F::kFusedRing1, F::kFusedRing2}, {F::kFusedDirect, F::kFusedRing2}};
  const std::string none = StrategyFamilyName(F::kNone);
  for (const auto& [fa, fc] : family_pairs) {
    const std::string a = StrategyFamilyName(fa), c = StrategyFamilyName(fc);
    std::vector<double> all, bound;
    for (const OverlapConfigResult& cfg : b.configs) {
      const double ta = Time(cfg, a), tc = Time(cfg, c);
      if (ta <= 0 || tc <= 0) continue;
      all.push_back(ta / tc);
      if (CommBound(cfg)) bound.push_back(ta / tc);
    }
    if (!all.empty()) out->ratios[a + "/" + c] = core::SummarizeMinMedianMax(all);
    if (!bound.empty())
      out->ratios[a + "/" + c + " comm-bound"] = core::SummarizeMinMedianMax(bound);
  }
  {
    std::vector<double> all, bound;
    for (const OverlapConfigResult& cfg : b.configs) {
      const double tn = Time(cfg, none);
      double best = 0;
      for (const OverlapRun& r : cfg.runs) {
        if (r.strategy == none || !r.timed || r.median_s <= 0) continue;
        if (best == 0 || r.median_s < best) best = r.median_s;
      }
      if (tn <= 0 || best <= 0) continue;
      all.push_back(tn / best);
      if (CommBound(cfg)) bound.push_back(tn / best);
    }
    if (!all.empty()) out->ratios["none/best"] = core::SummarizeMinMedianMax(all);
    if (!bound.empty()) out->ratios["none/best comm-bound"] = core::SummarizeMinMedianMax(bound);
  }
}

// Degree model: per-configuration fit and exhaustive best; returns the even (training)
// configurations' samples by operator class.
std::map<std::string, std::vector<DegreeSample>> AddDegreeRows(const OverlapBench& b,
                                                               OverlapSummary* out) {
  std::vector<double> regrets;
  std::map<std::string, std::vector<DegreeSample>> train;
  for (size_t i = 0; i < b.configs.size(); ++i) {
    const OverlapConfigResult& cfg = b.configs[i];
    const std::map<int, double> t = DecompositionTimes(cfg);
    const bool held_out = i % 2 == 1;
    if (!held_out) {
      const std::vector<DegreeSample> d = DegreeSamplesOf(cfg);
      auto& v = train[OperatorClassOf(cfg.shape.kind)];
      v.insert(v.end(), d.begin(), d.end());
    }
    auto choice = FitAndChooseDegree(t);
    if (!choice.ok()) continue;
    DegreeRow row;
    row.label = cfg.shape.label;
    row.held_out = held_out;
    row.d_fit = choice->d_star;
    row.d_best = t.begin()->first;
    for (const auto& [d, s] : t)
      if (s < t.at(row.d_best)) row.d_best = d;
    row.regret = t.at(row.d_fit) / t.at(row.d_best) - 1;
    row.gain_vs_d4 = t.count(4) ? t.at(4) / t.at(row.d_fit) : 0;
    regrets.push_back(row.regret);
    out->max_gain_vs_d4 = std::max(out->max_gain_vs_d4, row.gain_vs_d4);
    out->degree.push_back(row);
  }
  if (!regrets.empty()) {
    out->regret_median = core::Median(regrets);
    out->regret_p95 = core::Percentile(regrets, 95);
  }
  return train;
}

// Class model, fitted on `train`, scored on the held-out (odd) configurations.
void AddClassModel(const OverlapBench& b,
                   const std::map<std::string, std::vector<DegreeSample>>& train,
                   OverlapSummary* out) {
  std::map<std::string, DegreeClassModel> models;
  for (const auto& [cls, samples] : train) {
    auto m = FitDegreeClass(samples);
    if (m.ok()) {
      models[cls] = *m;
      out->class_params[cls] = {m->alpha_s, m->delta_s, m->kappa};
    }
  }
  std::vector<double> errors;
  for (size_t i = 0; i < b.configs.size(); ++i) {
    if (i % 2 == 0) continue;
    const OverlapConfigResult& cfg = b.configs[i];
    const auto it = models.find(OperatorClassOf(cfg.shape.kind));
    if (it == models.end()) continue;
    const DegreeFit f = AnalyticDegreeFit(cfg.gemm_s, cfg.modeled_collective_s, it->second.alpha_s,
                                          it->second.delta_s, it->second.kappa);
    std::vector<double> e;
    for (const auto& [d, s] : DecompositionTimes(cfg)) e.push_back(std::fabs(f.Predict(d) - s) / s);
    if (e.empty()) continue;
    const double mape = core::Mean(e);
    errors.insert(errors.end(), e.begin(), e.end());
    for (DegreeRow& row : out->degree)
      if (row.label == cfg.shape.label) row.class_mape = mape;
  }
  if (!errors.empty()) out->class_mape = core::Mean(errors);
}

// Pipeline model: fitted per class on the even configurations, MAPE on the odd ones, d* on
// every configuration.
void AddPipelineModel(const OverlapBench& b, OverlapSummary* out) {
  std::map<std::string, std::vector<PipelineSample>> ptrain;
  for (size_t i = 0; i < b.configs.size(); i += 2) {
    const std::vector<PipelineSample> p = PipelineSamplesOf(b.configs[i]);
    auto& v = ptrain[OperatorClassOf(b.configs[i].shape.kind)];
    v.insert(v.end(), p.begin(), p.end());
  }
  std::map<std::string, PipelineModel> pmodels;
  for (const auto& [cls, samples] : ptrain) {
    auto m = FitPipelineModel(samples);
    if (!m.ok()) continue;
    pmodels[cls] = *m;
    out->pipeline_params[cls] = {m->alpha_s, m->delta_s, m->kappa};
  }
  std::vector<double> perrors, pregrets;
  for (size_t i = 0; i < b.configs.size(); ++i) {
    const OverlapConfigResult& cfg = b.configs[i];
    const auto it = pmodels.find(OperatorClassOf(cfg.shape.kind));
    const std::vector<PipelineSample> p = PipelineSamplesOf(cfg);
    if (it == pmodels.end() || p.empty()) continue;
    DegreeRow* row = nullptr;
    for (DegreeRow& r : out->degree)
      if (r.label == cfg.shape.label) row = &r;
    if (row == nullptr) continue;
    const std::map<int, double> t = DecompositionTimes(cfg);
    std::vector<double> e;
    double best_pred = 0;
    for (const PipelineSample& x : p) {
      const double pred = it->second.Predict(x.part_gemm_s, x.part_collective_s, x.d);
      e.push_back(std::fabs(pred - x.t_s) / x.t_s);
      if (row->d_pipeline == 0 || pred < best_pred) {
        best_pred = pred;
        row->d_pipeline = x.d;
      }
    }
    row->pipeline_regret = t.at(row->d_pipeline) / t.at(row->d_best) - 1;
    pregrets.push_back(row->pipeline_regret);
    if (i % 2 == 1) {
      row->pipeline_mape = core::Mean(e);
      perrors.insert(perrors.end(), e.begin(), e.end());
    }
  }
  if (!perrors.empty()) out->pipeline_mape = core::Mean(perrors);
  if (!pregrets.empty()) {
    out->pipeline_regret_median = core::Median(pregrets);
    out->pipeline_regret_p95 = core::Percentile(pregrets, 95);
  }
}

}  // namespace

OverlapSummary SummarizeOverlap(const OverlapBench& b) {
  OverlapSummary out;
  AddRatios(b, &out);
  AddClassModel(b, AddDegreeRows(b, &out), &out);
  AddPipelineModel(b, &out);
  return out;
}

core::Json ToJson(const OverlapSummary& s) {
  core::Json ratios = core::Json::object();
  for (const auto& [k, r] : s.ratios) {
    ratios[k] = {{"count", r.count}, {"min", r.min}, {"median", r.median}, {"max", r.max}};
  }
  core::Json degree = core::Json::array();
  for (const DegreeRow& r : s.degree) {
    core::Json j = {{"label", r.label},
                    {"d_fit", r.d_fit},
                    {"d_best", r.d_best},
                    {"regret", r.regret},
                    {"held_out", r.held_out}};
    if (r.gain_vs_d4 > 0) j["gain_vs_d4"] = r.gain_vs_d4;
    if (r.class_mape >= 0) j["class_mape"] = r.class_mape;
    if (r.d_pipeline > 0) {
      j["d_pipeline"] = r.d_pipeline;
      j["pipeline_regret"] = r.pipeline_regret;
    }
    if (r.pipeline_mape >= 0) j["pipeline_mape"] = r.pipeline_mape;
    degree.push_back(j);
  }
  auto params_json = [](const std::map<std::string, std::array<double, 3>>& m) {
    core::Json j = core::Json::object();
    for (const auto& [cls, p] : m) j[cls] = {{"alpha_s", p[0]}, {"delta_s", p[1]}, {"kappa", p[2]}};
    return j;
  };
  const core::Json params = params_json(s.class_params);
  core::Json j = {{"ratios", ratios},
                  {"degree", degree},
                  {"regret_median", s.regret_median},
                  {"regret_p95", s.regret_p95},
                  {"max_gain_vs_d4", s.max_gain_vs_d4},
                  {"class_params", params}};
  if (s.class_mape >= 0) j["class_mape_held_out"] = s.class_mape;
  if (!s.pipeline_params.empty()) j["pipeline_params"] = params_json(s.pipeline_params);
  if (s.pipeline_mape >= 0) j["pipeline_mape_held_out"] = s.pipeline_mape;
  if (s.pipeline_regret_median >= 0) {
    j["pipeline_regret_median"] = s.pipeline_regret_median;
    j["pipeline_regret_p95"] = s.pipeline_regret_p95;
  }
  return j;
}

}  // namespace tessera::compass

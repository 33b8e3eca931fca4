#include "tarot/bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <memory>

#include "core/elapsed.h"
#include "core/progress.h"
#include "core/rng.h"
#include "core/stats.h"
#include "tarot/backends.h"

namespace tessera::tarot {
namespace {

// --sweep-skill values: "all" (noisy.rate) or one skill of the noisy reasoner (noisy.<skill>).
constexpr const char* kSkills[] = {"all",       "attribute",     "relation", "ordinal",
                                   "knowledge", "hallucination", "box",      "judge"};

constexpr int kMaxScenes = 100000;

uint64_t HashMask(const Mask& m) {
  uint64_t h = 0xcbf29ce484222325ULL ^ (static_cast<uint64_t>(m.width()) << 32) ^
               static_cast<uint64_t>(m.height());
  for (uint64_t w : m.words()) {
    h ^= w;
    h *= 0x100000001b3ULL;
    h ^= h >> 29;
  }
  return h;
}

double MeanOf(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

std::string RateText(double rate) { return fmt::format("{}", rate); }

}  // namespace

core::Status ValidateBenchOptions(const BenchOptions& o) {
  if (o.set != kSetRefscenes && o.set != kSetFmnist) {
    return core::InvalidArgument(
        fmt::format("tarot.bench.set: got '{}', must be refscenes or fmnist", o.set));
  }
  if (o.n < 1 || o.n > kMaxScenes) {
    return core::InvalidArgument(
        fmt::format("tarot.bench.n: got {}, must be in [1, {}] scenes", o.n, kMaxScenes));
  }
  if (o.systems.empty()) {
    return core::InvalidArgument("tarot.bench.systems: got none, need at least one (e.g. all)");
  }
  for (double r : {o.boundary_over_seg, o.boundary_under_seg}) {
    if (!(r >= 0 && r <= 1)) {
      return core::InvalidArgument(
          fmt::format("tarot.bench.boundary rates: got {}, must be in [0, 1]", r));
    }
  }
  for (double r : o.sweep_rates) {
    if (!(r >= 0 && r <= 1)) {
      return core::InvalidArgument(
          fmt::format("tarot.bench.sweep_rates: got {}, must be in [0, 1]", r));
    }
  }
  if (std::find(std::begin(kSkills), std::end(kSkills), o.sweep_skill) == std::end(kSkills)) {
    return core::InvalidArgument(fmt::format(
        "tarot.bench.sweep_skill: got '{}', must be one of all, attribute, relation, ordinal, "
        "knowledge, hallucination, box, judge",
        o.sweep_skill));
  }
  if (o.metrics.bootstrap_resamples < 0) {
    return core::InvalidArgument(
        fmt::format("tarot.bench.resamples: got {}, must be >= 0", o.metrics.bootstrap_resamples));
  }
  RETURN_IF_ERROR(ValidateSceneGeneratorOptions(o.scenes));
  RETURN_IF_ERROR(ValidateEriOptions(o.pipeline.eri));
  RETURN_IF_ERROR(ValidateMsrOptions(o.pipeline.msr));
  return core::Status::Ok();
}

core::StatusOr<std::vector<SystemRun>> RunSystems(const std::vector<Scene>& scenes,
                                                  const std::vector<System>& systems,
                                                  const BackendChoice& backends,
                                                  const PipelineOptions& base,
                                                  const std::function<void()>& on_query) {
  std::vector<SystemRun> runs(systems.size());
  for (size_t k = 0; k < systems.size(); ++k) runs[k].system = systems[k];
  bool needs_features = false;
  for (System s : systems) needs_features = needs_features || UsesMsr(s);
  for (size_t i = 0; i < scenes.size(); ++i) {
    const Scene& scene = scenes[i];
    // The backends read the scene through a shared pointer that does not own it.
    std::shared_ptr<const Scene> shared(&scene, [](const Scene*) {});
    ASSIGN_OR_RETURN(
        std::unique_ptr<Segmenter> seg,
        MakeSegmenter(backends.segmenter, {backends.segmenter_options, shared, scene.set}));
    ASSIGN_OR_RETURN(
        std::unique_ptr<Reasoner> rsn,
        MakeReasoner(backends.reasoner, {backends.reasoner_options, shared, scene.set}));
    std::unique_ptr<FeatureExtractor> features;
    if (needs_features) {
      ASSIGN_OR_RETURN(features, MakeFeatureExtractor(backends.features, {backends.features_options,
                                                                          shared, scene.set}));
    }
    std::vector<Mask> targets;
    for (const Expression& e : scene.expressions) targets.push_back(TargetMask(scene, e.target));
    for (size_t k = 0; k < systems.size(); ++k) {
      PipelineOptions po = base;
      po.system = systems[k];
      TarotPipeline pipeline(*seg, *rsn, features.get(), po);
      const auto t0 = std::chrono::steady_clock::now();
      core::Status set = pipeline.SetImage(scene.image, nullptr);
      if (!set.ok()) return set.WithPrefix(fmt::format("scene {} (seed {})", i, scene.seed));
      runs[k].setup_ms.push_back(core::MillisecondsSince(t0));
      for (size_t e = 0; e < scene.expressions.size(); ++e) {
        const Expression& expr = scene.expressions[e];
        BenchSample sample;
        sample.scene = static_cast<int>(i);
        sample.expression = static_cast<int>(e);
        sample.tier = TierName(expr.tier);
        sample.group = expr.program.plural;
        const auto q0 = std::chrono::steady_clock::now();
        core::StatusOr<QueryResult> r = pipeline.Run(expr.text, nullptr);
        sample.ms = core::MillisecondsSince(q0);
        const Mask empty(scene.width, scene.height);
        const Mask& predicted = r.ok() ? r->mask : empty;
        sample.score = ScoreSample(predicted, targets[e], sample.tier);
        sample.mask_hash = HashMask(predicted);
        if (r.ok()) {
          sample.calls = r->calls;
        } else {
          sample.error = true;
          if (runs[k].errors++ == 0) {
            runs[k].first_error =
                fmt::format("scene {} '{}': {}", i, expr.text, r.status().ToString());
          }
        }
        runs[k].samples.push_back(std::move(sample));
        if (on_query) on_query();
      }
    }
  }
  return runs;
}

core::StatusOr<SystemSummary> Summarize(const SystemRun& run, const MetricsOptions& metrics) {
  SystemSummary s;
  s.system = run.system;
  std::vector<SampleScore> scores;
  std::vector<double> seg, rsn, feat, ms;
  for (const BenchSample& b : run.samples) {
    scores.push_back(b.score);
    seg.push_back(b.calls.segmenter);
    rsn.push_back(b.calls.reasoner);
    feat.push_back(b.calls.features);
    ms.push_back(b.ms);
  }
  ASSIGN_OR_RETURN(s.by_tier, SummarizeByTier(scores, metrics));
  s.segmenter_calls = MeanOf(seg);
  s.reasoner_calls = MeanOf(rsn);
  s.feature_calls = MeanOf(feat);
  s.ms_median = core::Median(ms);
  s.ms_mean = MeanOf(ms);
  s.setup_ms_median = core::Median(run.setup_ms);
  s.errors = run.errors;
  s.first_error = run.first_error;
  return s;
}

namespace {

// The split over the samples `keep` selects.
BoundaryGroup SplitGroup(const SystemRun& eri_errors, const SystemRun& full_errors,
                         const SystemRun& eri_clean, const MetricsOptions& metrics,
                         const std::function<bool(const BenchSample&)>& keep) {
  BoundaryGroup b;
  std::vector<double> gains, clean_eri, clean_full, err_eri, err_full;
  for (size_t i = 0; i < eri_errors.samples.size(); ++i) {
    if (!keep(eri_errors.samples[i])) continue;
    const double eri = eri_errors.samples[i].score.iou, full = full_errors.samples[i].score.iou;
    if (eri_errors.samples[i].mask_hash != eri_clean.samples[i].mask_hash) {
      gains.push_back(full - eri);
      err_eri.push_back(eri);
      err_full.push_back(full);
    } else {
      clean_eri.push_back(eri);
      clean_full.push_back(full);
      if (full < eri - kHarmfulIouDrop) ++b.harmful;
    }
  }
  b.with_errors = static_cast<int>(gains.size());
  b.clean = static_cast<int>(clean_eri.size());
  b.eri_giou = MeanOf(err_eri);
  b.full_giou = MeanOf(err_full);
  b.gain = MeanOf(gains);
  b.gain_ci = {b.gain, b.gain};
  if (gains.size() > 1 && metrics.bootstrap_resamples > 0) {
    core::Rng rng(metrics.seed);
    std::vector<double> draws;
    for (int r = 0; r < metrics.bootstrap_resamples; ++r) {
      double s = 0;
      for (size_t j = 0; j < gains.size(); ++j) s += gains[rng.Below(gains.size())];
      draws.push_back(s / static_cast<double>(gains.size()));
    }
    b.gain_ci = {core::Percentile(draws, 2.5), core::Percentile(draws, 97.5)};
  }
  b.clean_eri_giou = MeanOf(clean_eri);
  b.clean_full_giou = MeanOf(clean_full);
  b.harmful_fraction = b.clean > 0 ? static_cast<double>(b.harmful) / b.clean : 0.0;
  return b;
}

}  // namespace

core::StatusOr<BoundarySplit> SplitBoundaryErrors(const SystemRun& eri_errors,
                                                  const SystemRun& full_errors,
                                                  const SystemRun& eri_clean,
                                                  const MetricsOptions& metrics) {
  const size_t n = eri_errors.samples.size();
  if (full_errors.samples.size() != n || eri_clean.samples.size() != n) {
    return core::Internal(fmt::format("boundary split: runs of {}, {} and {} samples differ", n,
                                      full_errors.samples.size(), eri_clean.samples.size()));
  }
  BoundarySplit b;
  b.all = SplitGroup(eri_errors, full_errors, eri_clean, metrics,
                     [](const BenchSample&) { return true; });
  b.single = SplitGroup(eri_errors, full_errors, eri_clean, metrics,
                        [](const BenchSample& s) { return !s.group; });
  b.group = SplitGroup(eri_errors, full_errors, eri_clean, metrics,
                       [](const BenchSample& s) { return s.group; });
  return b;
}

ReasonerSweep MakeSweep(std::vector<SweepPoint> points) {
  ReasonerSweep s;
  s.points = std::move(points);
  const SweepPoint* zero = nullptr;
  const SweepPoint* twenty = nullptr;
  for (const SweepPoint& p : s.points) {
    if (p.rate == 0) zero = &p;
    if (std::abs(p.rate - 0.2) < 1e-12) twenty = &p;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.full_loss_at_20 = zero && twenty ? zero->full_giou - twenty->full_giou : nan;
  s.coupling_loss_at_20 = zero && twenty ? zero->coupling_giou - twenty->coupling_giou : nan;
  return s;
}

core::StatusOr<BenchReport> RunBench(const BenchOptions& o) {
  RETURN_IF_ERROR(ValidateBenchOptions(o));
  const auto t0 = std::chrono::steady_clock::now();
  BenchReport report;
  report.options = o;
  SceneGeneratorOptions scene_options = o.scenes;
  scene_options.set = o.set;
  ASSIGN_OR_RETURN(std::vector<Scene> scenes, GenerateScenes(o.seed, o.n, scene_options));
  report.scenes = static_cast<int>(scenes.size());
  for (const Scene& s : scenes) {
    for (const Expression& e : s.expressions) ++report.samples_per_tier[TierName(e.tier)];
    report.samples += static_cast<int>(s.expressions.size());
  }
  const bool boundary = o.boundary_split && o.backends.segmenter == "synthetic";
  long total = static_cast<long>(o.systems.size());
  std::vector<System> msr_ablations;
  for (System s : o.systems) {
    if (UsesMsr(s) && s != System::kFull) msr_ablations.push_back(s);
  }
  if (boundary) total += 3 + static_cast<long>(msr_ablations.size());
  if (o.sweep_reasoner_error) total += 2 * static_cast<long>(o.sweep_rates.size());
  total *= report.samples;
  std::unique_ptr<core::ProgressBar> bar;
  if (o.progress) bar = std::make_unique<core::ProgressBar>("tarot bench", total);
  long done = 0;
  const std::function<void()> tick = [&] {
    if (bar) bar->Update(++done);
  };

  ASSIGN_OR_RETURN(std::vector<SystemRun> runs,
                   RunSystems(scenes, o.systems, o.backends, o.pipeline, tick));
  for (const SystemRun& run : runs) {
    ASSIGN_OR_RETURN(SystemSummary s, Summarize(run, o.metrics));
    report.systems.push_back(std::move(s));
  }

  if (boundary) {
    BackendChoice errors = o.backends, clean = o.backends;
    errors.segmenter_options.try_emplace("synthetic.over_seg", RateText(o.boundary_over_seg));
    errors.segmenter_options.try_emplace("synthetic.under_seg", RateText(o.boundary_under_seg));
    errors.segmenter_options.try_emplace("synthetic.seed", fmt::format("{}", o.seed));
    clean.segmenter_options = errors.segmenter_options;
    clean.segmenter_options["synthetic.over_seg"] = "0";
    clean.segmenter_options["synthetic.under_seg"] = "0";
    std::vector<System> error_systems = {System::kEri, System::kFull};
    error_systems.insert(error_systems.end(), msr_ablations.begin(), msr_ablations.end());
    ASSIGN_OR_RETURN(std::vector<SystemRun> err,
                     RunSystems(scenes, error_systems, errors, o.pipeline, tick));
    ASSIGN_OR_RETURN(std::vector<SystemRun> cln,
                     RunSystems(scenes, {System::kEri}, clean, o.pipeline, tick));
    ASSIGN_OR_RETURN(BoundarySplit split, SplitBoundaryErrors(err[0], err[1], cln[0], o.metrics));
    for (size_t k = 2; k < err.size(); ++k) {
      split.ablations.emplace_back(
          error_systems[k],
          SplitGroup(err[0], err[k], cln[0], o.metrics, [](const BenchSample&) { return true; }));
    }
    split.segmenter_options = errors.segmenter_options;
    report.boundary = std::move(split);
  }

  if (o.sweep_reasoner_error) {
    std::vector<SweepPoint> points;
    for (double rate : o.sweep_rates) {
      BackendChoice noisy = o.backends;
      // The chosen reasoner's own noisy.* options (box_jitter, box_swap, seed) are kept when it
      // is `noisy`; the rates are the sweep's.
      if (o.backends.reasoner != "noisy") noisy.reasoner_options.clear();
      noisy.reasoner_options.erase("noisy.rate");
      for (const char* skill : kSkills) noisy.reasoner_options.erase(std::string("noisy.") + skill);
      noisy.reasoner = "noisy";
      noisy.reasoner_options.try_emplace("noisy.seed", fmt::format("{}", o.seed));
      if (o.sweep_skill == "all") {
        noisy.reasoner_options["noisy.rate"] = RateText(rate);
      } else {
        noisy.reasoner_options["noisy.rate"] = "0";
        noisy.reasoner_options["noisy." + o.sweep_skill] = RateText(rate);
      }
      ASSIGN_OR_RETURN(
          std::vector<SystemRun> r,
          RunSystems(scenes, {System::kFull, System::kNaiveCoupling}, noisy, o.pipeline, tick));
      ASSIGN_OR_RETURN(SystemSummary full, Summarize(r[0], o.metrics));
      ASSIGN_OR_RETURN(SystemSummary coupling, Summarize(r[1], o.metrics));
      const MetricSummary& f = full.by_tier.at("all");
      const MetricSummary& c = coupling.by_tier.at("all");
      points.push_back({rate, f.giou, c.giou, f.giou_ci, c.giou_ci});
    }
    report.sweep = MakeSweep(std::move(points));
  }
  if (bar) bar->Done();
  report.wall_s = core::SecondsSince(t0);
  return report;
}

}  // namespace tessera::tarot

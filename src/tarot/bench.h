// The Tarot-SAM3 benchmark: systems (tarot/pipeline.h) over a generated set of referring
// expressions with exact masks, scored per tier (tarot/metrics.h), with calls and time per query.
//   set        "refscenes" or "fmnist": scenes GenerateScenes(seed, n) of that set
//              (tarot/scene_generator.h; `scenes.set` is taken from `set`), every expression of
//              every scene one sample, its target mask the ground truth. The backends get the
//              set in their context (the pixels-only ones read fmnist with the item classifier).
//   main table every chosen system over the chosen backends (segmenter, reasoner, features by
//              registry name, with their key=value options); per system and tier: gIoU, cIoU,
//              P@0.5/0.7/0.9 with bootstrap 95% intervals, mean backend calls per query
//              (CallCounts), median and mean wall milliseconds of TarotPipeline::Run (measured;
//              SetImage, including feature extraction, is timed apart per image).
//   boundary   (segmenter `synthetic` only) the MSR split: `eri` and `full` with the segmenter's
//              over/under-segmentation knobs on (synthetic.over_seg / under_seg, default 0.3 each
//              unless the segmenter options set them), and `eri` with both knobs at 0 (the other
//              options unchanged). A sample "has boundary errors" when the two ERI masks differ:
//              the injected errors changed what ERI returns; the others are "clean". Reported:
//              MSR's gIoU gain (full - eri) on the former, and the share of clean samples where
//              MSR lowers IoU by more than 0.05; over all samples, single-object targets and
//              group targets; and the same for each MSR ablation among the chosen systems.
//   sweep      the reasoner `noisy` at each error rate (default 0, 0.1, 0.2, 0.3, 0.4), every
//              skill at that rate (noisy.rate) or one skill alone: gIoU of `full` and
//              `naive-coupling`; the loss at a rate is gIoU(0) - gIoU(rate).
// A query whose backend returns an error is scored as an empty prediction and counted (errors
// per system, the first message kept); bad options, an unknown set, system or backend name fail
// the whole run before any query (InvalidArgument / NotFound naming it).
// Deterministic apart from the times: the same options give the same scores, bit for bit.
// Progress (core::ProgressBar on stderr, when `progress`) counts (system, sample) runs.
// Thread-safety: runs on the calling thread; no shared state.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/registry.h"
#include "core/status.h"
#include "tarot/metrics.h"
#include "tarot/pipeline.h"
#include "tarot/scene.h"
#include "tarot/scene_generator.h"

namespace tessera::tarot {

struct BackendChoice {
  std::string segmenter = "synthetic", reasoner = "rule", features = "handcrafted";
  core::RegistryOptions segmenter_options, reasoner_options, features_options;
};

struct BenchOptions {
  std::string set = "refscenes";  // refscenes or fmnist
  int n = 20;                     // scenes
  uint64_t seed = 1;
  SceneGeneratorOptions scenes;
  std::vector<System> systems = AllSystems();
  BackendChoice backends;
  PipelineOptions pipeline;  // ERI and MSR options; the system is set per run
  MetricsOptions metrics;
  bool boundary_split = true;  // ignored unless the segmenter is `synthetic`
  double boundary_over_seg = 0.3, boundary_under_seg = 0.3;
  bool sweep_reasoner_error = false;
  std::vector<double> sweep_rates = {0, 0.1, 0.2, 0.3, 0.4};
  // "all": noisy.rate (every skill); or one skill (attribute, relation, ordinal, knowledge,
  // hallucination, box, judge) at the rate with the others at 0.
  std::string sweep_skill = "all";
  bool progress = false;
};

// InvalidArgument naming the field ("tarot.bench.n: got 0, must be in [1, 100000]").
core::Status ValidateBenchOptions(const BenchOptions& o);

// One query of one system.
struct BenchSample {
  int scene = 0, expression = 0;
  std::string tier;
  SampleScore score;
  CallCounts calls;
  double ms = 0;           // TarotPipeline::Run wall time (measured)
  uint64_t mask_hash = 0;  // of the predicted mask's bits (equality checks across runs)
  bool error = false;
  bool group = false;  // the expression names a group (a plural program)
};

struct SystemRun {
  System system = System::kFull;
  std::vector<BenchSample> samples;  // scene order, then expression order
  std::vector<double> setup_ms;      // per scene: SetImage (features included)
  int errors = 0;
  std::string first_error;
};

// Runs `systems` over every expression of `scenes` with `backends` (one segmenter, reasoner and
// features instance per scene, shared by the systems). `on_query` (may be empty) is called
// after each (system, sample) run.
core::StatusOr<std::vector<SystemRun>> RunSystems(const std::vector<Scene>& scenes,
                                                  const std::vector<System>& systems,
                                                  const BackendChoice& backends,
                                                  const PipelineOptions& base,
                                                  const std::function<void()>& on_query = {});

struct SystemSummary {
  System system = System::kFull;
  std::map<std::string, MetricSummary> by_tier;                       // tiers and "all"
  double segmenter_calls = 0, reasoner_calls = 0, feature_calls = 0;  // mean per query
  double ms_median = 0, ms_mean = 0;
  double setup_ms_median = 0;
  int errors = 0;
  std::string first_error;
};
core::StatusOr<SystemSummary> Summarize(const SystemRun& run, const MetricsOptions& metrics);

// The MSR split over one set of samples.
struct BoundaryGroup {
  int with_errors = 0, clean = 0;
  double eri_giou = 0, full_giou = 0, gain = 0;  // on the samples with boundary errors
  Interval gain_ci;                              // percentile bootstrap of the mean gain
  double clean_eri_giou = 0, clean_full_giou = 0;
  int harmful = 0;  // clean samples where full's IoU < eri's - kHarmfulIouDrop
  double harmful_fraction = 0;
};
struct BoundarySplit {
  core::RegistryOptions segmenter_options;  // what the error runs used
  BoundaryGroup all;
  // The same over single-object targets and over group (plural) targets: MSR refines one
  // object, so the two behave differently.
  BoundaryGroup single, group;
  // The MSR ablations among the chosen systems (msr-flat-features, msr-yes-judge), each in
  // full's place over all samples: their gain over eri and their harm on clean samples.
  std::vector<std::pair<System, BoundaryGroup>> ablations;
};
// From aligned runs (same scenes and samples): eri and full with errors, eri clean.
core::StatusOr<BoundarySplit> SplitBoundaryErrors(const SystemRun& eri_errors,
                                                  const SystemRun& full_errors,
                                                  const SystemRun& eri_clean,
                                                  const MetricsOptions& metrics);
inline constexpr double kHarmfulIouDrop = 0.05;

struct SweepPoint {
  double rate = 0;
  double full_giou = 0, coupling_giou = 0;
  Interval full_ci, coupling_ci;
};
struct ReasonerSweep {
  std::vector<SweepPoint> points;
  // Loss = gIoU(rate 0) - gIoU(rate); at rate 0.2 when swept (else NaN).
  double full_loss_at_20 = 0, coupling_loss_at_20 = 0;
};
ReasonerSweep MakeSweep(std::vector<SweepPoint> points);

struct BenchReport {
  BenchOptions options;
  int scenes = 0, samples = 0;
  std::map<std::string, int> samples_per_tier;
  std::vector<SystemSummary> systems;
  std::optional<BoundarySplit> boundary;
  std::optional<ReasonerSweep> sweep;
  double wall_s = 0;
};

core::StatusOr<BenchReport> RunBench(const BenchOptions& options);

}  // namespace tessera::tarot

// The benchmark library: the boundary split, the sweep losses and every target bar on hand-made
// runs and reports; a small seeded run end to end (counts, determinism, JSON); named errors.
#include "tarot/bench.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tarot/bench_report.h"

namespace tessera::tarot {
namespace {

BenchSample Sample(double iou, uint64_t hash, bool group = false) {
  BenchSample s;
  s.score.iou = iou;
  s.mask_hash = hash;
  s.group = group;
  return s;
}

SystemRun RunOf(System system, std::vector<BenchSample> samples) {
  SystemRun r;
  r.system = system;
  r.samples = std::move(samples);
  return r;
}

TEST(TarotBench, BoundarySplitSeparatesSamplesWhoseEriMaskTheErrorsChanged) {
  // Samples 0-1: the errors changed ERI's mask (hash differs from the clean run); 2-5 clean.
  const SystemRun eri = RunOf(System::kEri, {Sample(0.5, 1), Sample(0.6, 2, true), Sample(0.9, 3),
                                             Sample(0.8, 4), Sample(1.0, 5), Sample(0.7, 6)});
  const SystemRun full = RunOf(System::kFull, {Sample(0.9, 0), Sample(0.2, 0), Sample(0.84, 0),
                                               Sample(0.8, 0), Sample(0.9, 0), Sample(0.71, 0)});
  const SystemRun clean = RunOf(System::kEri, {Sample(1, 9), Sample(1, 8), Sample(1, 3),
                                               Sample(1, 4), Sample(1, 5), Sample(1, 6)});
  MetricsOptions m;
  m.bootstrap_resamples = 0;
  auto split = SplitBoundaryErrors(eri, full, clean, m);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  const BoundaryGroup& a = split->all;
  EXPECT_EQ(a.with_errors, 2);
  EXPECT_EQ(a.clean, 4);
  EXPECT_DOUBLE_EQ(a.eri_giou, 0.55);
  EXPECT_DOUBLE_EQ(a.full_giou, 0.55);
  EXPECT_NEAR(a.gain, 0.0, 1e-12);  // (+0.4 - 0.4) / 2
  // Clean: 0.9 -> 0.84 (-0.06, harmful), 0.8 -> 0.8, 1.0 -> 0.9 (-0.1, harmful), 0.7 -> 0.71.
  EXPECT_EQ(a.harmful, 2);
  EXPECT_DOUBLE_EQ(a.harmful_fraction, 0.5);
  EXPECT_EQ(split->single.with_errors, 1);
  EXPECT_NEAR(split->single.gain, 0.4, 1e-12);
  EXPECT_EQ(split->group.with_errors, 1);
  EXPECT_NEAR(split->group.gain, -0.4, 1e-12);
  EXPECT_EQ(split->group.clean, 0);
  // A drop of exactly 0.05 is not harmful.
  auto edge = SplitBoundaryErrors(RunOf(System::kEri, {Sample(0.75, 1)}),
                                  RunOf(System::kFull, {Sample(0.7, 1)}),
                                  RunOf(System::kEri, {Sample(0.75, 1)}), m);
  ASSERT_TRUE(edge.ok());
  EXPECT_EQ(edge->all.harmful, 0);
  // Misaligned runs are an internal error.
  EXPECT_FALSE(SplitBoundaryErrors(eri, RunOf(System::kFull, {}), clean, m).ok());
}

TEST(TarotBench, SweepLossesAreTheDropFromZeroToTwentyPercent) {
  ReasonerSweep s =
      MakeSweep({{0, 0.9, 0.8, {}, {}}, {0.1, 0.85, 0.6, {}, {}}, {0.2, 0.8, 0.5, {}, {}}});
  EXPECT_NEAR(s.full_loss_at_20, 0.1, 1e-12);
  EXPECT_NEAR(s.coupling_loss_at_20, 0.3, 1e-12);
  EXPECT_TRUE(std::isnan(MakeSweep({{0, 0.9, 0.8, {}, {}}}).full_loss_at_20));
}

SystemSummary WithGiou(System system, std::map<std::string, double> giou) {
  SystemSummary s;
  s.system = system;
  for (const auto& [tier, g] : giou) {
    s.by_tier[tier].giou = g;
    s.by_tier[tier].samples = 10;
  }
  return s;
}

const TargetCheck& Check(const std::vector<TargetCheck>& checks, const std::string& name) {
  for (const TargetCheck& c : checks)
    if (c.name == name) return c;
  static const TargetCheck none;
  ADD_FAILURE() << "no check " << name;
  return none;
}

TEST(TarotBench, TargetsCompareWithTheIssuesBars) {
  BenchReport r;
  r.systems = {WithGiou(System::kNaive, {{"E0", 0.9}, {"E1", 0.9}, {"E3", 0.2}, {"E4", 0.1}}),
               WithGiou(System::kEri, {{"E0", 0.885}, {"E1", 0.85}, {"E3", 0.3}, {"E4", 0.19}})};
  auto checks = CheckTargets(r);
  EXPECT_TRUE(Check(checks, "eri-gain-E3").met);  // +10.0 points exactly
  EXPECT_NEAR(Check(checks, "eri-gain-E3").value, 10.0, 1e-9);
  EXPECT_FALSE(Check(checks, "eri-gain-E4").met);  // +9
  EXPECT_TRUE(Check(checks, "eri-gain-E4").applicable);
  EXPECT_FALSE(Check(checks, "eri-gain-I1").applicable);  // no I1 samples
  EXPECT_EQ(Check(checks, "eri-gain-I1").note, "no I1 samples");
  EXPECT_TRUE(Check(checks, "eri-keep-E0").met);   // -1.5
  EXPECT_FALSE(Check(checks, "eri-keep-E1").met);  // -5
  EXPECT_FALSE(Check(checks, "msr-gain").applicable);
  EXPECT_FALSE(Check(checks, "reasoner-error").applicable);

  r.boundary = BoundarySplit{};
  r.boundary->all.with_errors = 10;
  r.boundary->all.gain = 0.05;
  r.boundary->all.clean = 100;
  r.boundary->all.harmful = 3;
  r.boundary->all.harmful_fraction = 0.03;
  r.sweep = MakeSweep({{0, 0.9, 0.9, {}, {}}, {0.2, 0.8, 0.7, {}, {}}});
  checks = CheckTargets(r);
  EXPECT_TRUE(Check(checks, "msr-gain").met);        // +5 points
  EXPECT_FALSE(Check(checks, "msr-harm").met);       // 3% is not < 3%
  EXPECT_TRUE(Check(checks, "reasoner-error").met);  // 10 <= 0.5 x 20
  EXPECT_NEAR(Check(checks, "reasoner-error").value, 0.5, 1e-9);
  r.sweep = MakeSweep({{0, 0.9, 0.9, {}, {}}, {0.2, 0.85, 0.9, {}, {}}});
  EXPECT_FALSE(Check(CheckTargets(r), "reasoner-error").met);  // coupling lost nothing
  r.sweep = MakeSweep({{0, 0.9, 0.9, {}, {}}, {0.2, 0.9, 0.95, {}, {}}});
  EXPECT_TRUE(Check(CheckTargets(r), "reasoner-error").met);

  r.systems.pop_back();  // no eri
  EXPECT_EQ(Check(CheckTargets(r), "eri-gain-E3").note, "needs systems eri and naive");
}

BenchOptions Small() {
  BenchOptions o;
  o.n = 2;
  o.seed = 3;
  o.systems = {System::kNaive, System::kNaiveCoupling, System::kEri, System::kFull};
  o.metrics.bootstrap_resamples = 50;
  o.sweep_reasoner_error = true;
  o.sweep_rates = {0, 0.2};
  return o;
}

TEST(TarotBench, ASmallRunCountsEverySampleAndRepeatsBitForBit) {
  auto a = RunBench(Small());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->scenes, 2);
  int per_tier = 0;
  for (const auto& [tier, n] : a->samples_per_tier) per_tier += n;
  EXPECT_EQ(per_tier, a->samples);
  EXPECT_EQ(a->samples_per_tier.size(), 7u);  // every tier (the generator requires them)
  ASSERT_EQ(a->systems.size(), 4u);
  const SystemSummary& naive = a->systems[0];
  EXPECT_EQ(naive.by_tier.at("all").samples, a->samples);
  EXPECT_DOUBLE_EQ(naive.segmenter_calls, 1.0);  // one SegmentText per query
  EXPECT_DOUBLE_EQ(naive.reasoner_calls, 0.0);
  EXPECT_DOUBLE_EQ(a->systems[1].reasoner_calls, 1.0);  // one Ground per query
  EXPECT_GT(a->systems[3].feature_calls, 0.0);          // MSR's similarity maps
  ASSERT_TRUE(a->boundary.has_value());
  EXPECT_EQ(a->boundary->all.with_errors + a->boundary->all.clean, a->samples);
  EXPECT_EQ(a->boundary->segmenter_options.at("synthetic.over_seg"), "0.3");
  ASSERT_TRUE(a->sweep.has_value());
  EXPECT_EQ(a->sweep->points.size(), 2u);
  EXPECT_FALSE(std::isnan(a->sweep->full_loss_at_20));

  auto b = RunBench(Small());
  ASSERT_TRUE(b.ok());
  for (size_t k = 0; k < a->systems.size(); ++k) {
    for (const auto& [tier, m] : a->systems[k].by_tier) {
      const MetricSummary& o = b->systems[k].by_tier.at(tier);
      EXPECT_EQ(m.giou, o.giou) << tier;
      EXPECT_EQ(m.ciou, o.ciou) << tier;
      EXPECT_EQ(m.giou_ci.lo, o.giou_ci.lo) << tier;
    }
  }
  EXPECT_EQ(a->boundary->all.gain, b->boundary->all.gain);
  EXPECT_EQ(a->sweep->points[1].full_giou, b->sweep->points[1].full_giou);

  const core::Json j = BenchReportToJson(*a);
  EXPECT_EQ(j["kind"], "tarot-bench");
  EXPECT_EQ(j["systems"].size(), 4u);
  EXPECT_TRUE(j["systems"][0]["tiers"].contains("E4"));
  EXPECT_EQ(j["targets"].size(), 9u);
  EXPECT_TRUE(j.contains("boundary"));
  EXPECT_EQ(j["sweep"]["points"].size(), 2u);
}

// An MSR ablation among the systems gets its own row in the boundary split, over the same
// samples with errors as full's.
TEST(TarotBench, MsrAblationsJoinTheBoundarySplit) {
  BenchOptions o = Small();
  o.systems = {System::kEri, System::kFull, System::kMsrYesJudge};
  o.sweep_reasoner_error = false;
  auto r = RunBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->boundary.has_value());
  ASSERT_EQ(r->boundary->ablations.size(), 1u);
  const auto& [system, g] = r->boundary->ablations[0];
  EXPECT_EQ(system, System::kMsrYesJudge);
  EXPECT_EQ(g.with_errors, r->boundary->all.with_errors);
  EXPECT_EQ(g.clean, r->boundary->all.clean);
  EXPECT_EQ(g.eri_giou, r->boundary->all.eri_giou);
  EXPECT_TRUE(BenchReportToJson(*r)["boundary"].contains("msr-yes-judge"));
}

TEST(TarotBench, NoBoundarySplitWithoutTheSyntheticSegmenter) {
  BenchOptions o = Small();
  o.n = 1;
  o.systems = {System::kNaive};
  o.sweep_reasoner_error = false;
  o.backends.segmenter = "classical";
  auto r = RunBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->boundary.has_value());
  EXPECT_FALSE(r->sweep.has_value());
}

TEST(TarotBench, BadOptionsAreNamedBeforeAnyQuery) {
  BenchOptions o = Small();
  o.n = 0;
  EXPECT_EQ(RunBench(o).status().message(), "tarot.bench.n: got 0, must be in [1, 100000] scenes");
  o = Small();
  o.set = "coco";
  EXPECT_NE(RunBench(o).status().message().find("tarot.bench.set: got 'coco'"), std::string::npos);
  o = Small();
  o.sweep_skill = "spelling";
  EXPECT_NE(RunBench(o).status().message().find("sweep_skill: got 'spelling'"), std::string::npos);
  o = Small();
  o.systems.clear();
  EXPECT_FALSE(RunBench(o).ok());
  o = Small();
  o.backends.segmenter = "sam3";
  auto r = RunBench(o);
  EXPECT_EQ(r.status().code(), core::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("tarot.segmenter: got 'sam3'"), std::string::npos);
  o = Small();
  o.backends.reasoner_options = {{"rule.x", "1"}};
  EXPECT_NE(RunBench(o).status().message().find("got option 'rule.x'"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tarot

// BuildValidationReport, AssessDrift and ToJson on hand-made measurements of the hand-made
// 2-rank profile (testdata/profile_2rank.json).
#include "zellige/validation_report.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "zellige/cost_model_profile.h"
#include "zellige/simulator.h"

namespace tessera::zellige {
namespace {

Profile TestProfile() {
  auto p = LoadProfile(std::string(TESSERA_ZELLIGE_TESTDATA) + "/profile_2rank.json");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

// A measurement whose makespan is `makespan_s` (rank 0), peak `peak_bytes`, and whose ranks'
// forward + backward is `compute_s[r]`.
PlanMeasurement Measured(double makespan_s, double peak_bytes, std::vector<double> compute_s) {
  PlanMeasurement m;
  m.memory_measured = true;
  for (size_t r = 0; r < compute_s.size(); ++r) {
    RankMeasurement rm;
    rm.forward_s = {compute_s[r] / 4};
    rm.backward_s = {compute_s[r] * 3 / 4};
    rm.tail_s = {0};
    rm.step_s = {r == 0 ? makespan_s : 0};
    rm.peak_bytes = static_cast<int64_t>(peak_bytes);
    m.ranks.push_back(rm);
  }
  return m;
}

struct Fixture {
  Profile profile = TestProfile();
  ProfileCostModel cost{std::make_shared<const Profile>(profile)};
  std::vector<ValidationCase> cases;
  DriftProbe probe;
  Fixture() {
    ValidationSpec spec;
    spec.token_scale = 0.001;
    cases = *MakeValidationCases(spec);
    cases.resize(3);
    probe = *MakeDriftProbe(profile);
  }
  // Every case measured exactly as predicted (memory 10% above); probe x `drift` per rank.
  std::vector<PlanMeasurement> Measurements(double drift_rank0, double drift_rank1) {
    std::vector<PlanMeasurement> ms;
    for (const ValidationCase& c : cases) {
      SimResult sim = *Simulate(c.plan, c.batch, cost);
      ms.push_back(Measured(sim.makespan_s, sim.peak_mem_bytes / 1.1, {0.1, 0.1}));
    }
    ms.push_back(
        Measured(2 * probe.profiled_makespan_s, 0,
                 {drift_rank0 * probe.profiled_compute_s, drift_rank1 * probe.profiled_compute_s}));
    return ms;
  }
};

TEST(ValidationReportTest, ExactPredictionsAndRankFactors) {
  Fixture f;
  auto r = BuildValidationReport(f.cases, f.probe, f.Measurements(1.5, 0.5), f.cost);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rows.size(), 3u);
  EXPECT_EQ(r->makespan.count, 3);
  EXPECT_NEAR(r->makespan.mape_percent, 0, 1e-9);
  EXPECT_NEAR(r->memory.mape_percent, 10, 1e-3);
  EXPECT_NEAR(r->drift.factor, 2.0, 1e-12);
  EXPECT_NEAR(r->makespan_uniform.mape_percent, 100, 1e-9);  // raw x 2 against raw
  ASSERT_EQ(r->drift.rank_time_factors.size(), 2u);
  EXPECT_NEAR(r->drift.rank_time_factors[0], 1.5, 1e-12);
  EXPECT_NEAR(r->drift.rank_time_factors[1], 0.5, 1e-12);
  EXPECT_EQ(r->drift.rank_factors_error, "");
  EXPECT_NEAR(r->probe_measured_makespan_s, 2 * f.probe.profiled_makespan_s, 1e-12);
}

// With the solo probe measured (rank 0 alone 1.6x faster than with both ranks busy), the
// calibrated profile takes that solo speed-up, and a plan with an idle rank is predicted
// faster than without it; a plan with both ranks busy throughout keeps its prediction.
TEST(ValidationReportTest, SoloProbeSetsTheSoloSpeedupNow) {
  Fixture f;
  std::vector<PlanMeasurement> ms = f.Measurements(1.0, 1.0);
  const double busy0 = f.probe.profiled_compute_s;
  ms.push_back(Measured(1, 0, {busy0 / 1.6, 0}));
  auto with = BuildValidationReport(f.cases, f.probe, ms, f.cost);
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  EXPECT_NEAR(with->drift.solo_speedup_now, 1.6, 1e-12);
  EXPECT_DOUBLE_EQ(with->drift.solo_speedup_profiled, f.profile.solo_speedup);
  EXPECT_NEAR(with->drift.now_profile.solo_speedup, 1.6, 1e-12);
  auto without = BuildValidationReport(f.cases, f.probe, f.Measurements(1.0, 1.0), f.cost);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->drift.solo_speedup_now, 0);
  EXPECT_DOUBLE_EQ(without->drift.now_profile.solo_speedup, f.profile.solo_speedup);
  // A hand-made plan of one sequence on rank 0 alone (rank 1 idle) and one of a sequence on
  // each rank: only the first gets faster with the larger solo speed-up.
  const ProfileCostModel now_with(std::make_shared<const Profile>(with->drift.now_profile));
  const ProfileCostModel now_without(std::make_shared<const Profile>(without->drift.now_profile));
  workload::Batch b;
  b.sequences = {{0, models::MediaKind::kImage, "", 0, 256},
                 {1, models::MediaKind::kImage, "", 0, 256}};
  Plan alone{"hand", 2, {{0, {}, {0}}, {1, {}, {0}}}};
  Plan both{"hand", 2, {{0, {}, {0}}, {1, {}, {1}}}};
  ASSERT_GT(f.profile.solo_speedup, 0);
  if (f.profile.solo_speedup < 1.6) {
    EXPECT_LT(Simulate(alone, b, now_with)->makespan_s,
              Simulate(alone, b, now_without)->makespan_s);
  }
  EXPECT_NEAR(Simulate(both, b, now_with)->makespan_s, Simulate(both, b, now_without)->makespan_s,
              1e-12);
}

TEST(ValidationReportTest, OutOfRangeDriftFallsBackToTheRawProfile) {
  Fixture f;
  auto r = BuildValidationReport(f.cases, f.probe, f.Measurements(20, 1), f.cost);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->drift.rank_factors_error, "");
  EXPECT_TRUE(r->drift.rank_time_factors.empty());
  EXPECT_EQ(r->drift.now_profile, f.profile);
  for (const ValidationRow& row : r->rows) {
    EXPECT_EQ(row.drift_corrected_makespan_s, row.predicted_makespan_s);
  }
}

TEST(ValidationReportTest, MedianComputeSIsPerRank) {
  PlanMeasurement m;
  RankMeasurement r;
  r.forward_s = {1, 2, 10};
  r.backward_s = {1, 1, 1};
  m.ranks = {r, r};
  EXPECT_EQ(MedianComputeS(m), (std::vector<double>{3, 3}));
}

TEST(ValidationReportTest, Errors) {
  Fixture f;
  std::vector<PlanMeasurement> ms = f.Measurements(1, 1);
  ms.pop_back();
  EXPECT_EQ(BuildValidationReport(f.cases, f.probe, ms, f.cost).status().code(),
            core::StatusCode::kInvalidArgument);
  ms = f.Measurements(1, 1);
  ms[0].memory_measured = false;
  EXPECT_EQ(BuildValidationReport(f.cases, f.probe, ms, f.cost).status().code(),
            core::StatusCode::kFailedPrecondition);
}

TEST(ValidationReportTest, JsonFields) {
  Fixture f;
  auto r = BuildValidationReport(f.cases, f.probe, f.Measurements(1.5, 0.5), f.cost);
  ASSERT_TRUE(r.ok());
  r->ranks = 2;
  r->profile_path = "p.json";
  const core::Json j = ToJson(*r);
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.insert(it.key());
  EXPECT_EQ(keys,
            (std::set<std::string>{"label", "profile", "provenance", "ranks", "oversubscribed",
                                   "repeats", "token_scale", "makespan", "drift_probe",
                                   "makespan_drift_corrected", "memory", "plans"}));
  EXPECT_EQ(j["plans"].size(), 3u);
  EXPECT_EQ(j["plans"][0]["ranks"].size(), 2u);
  EXPECT_TRUE(j["plans"][0].contains("drift_corrected_makespan_s"));
  EXPECT_EQ(j["drift_probe"]["rank_time_factors"].size(), 2u);
  EXPECT_TRUE(j["memory"].contains("mae_bytes"));
  EXPECT_TRUE(j["makespan"].contains("mae_s"));
}

}  // namespace
}  // namespace tessera::zellige

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

#include "xema/pipeline/mitigation_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "xema/pipeline/pipeline_test_util.h"

namespace tessera::xema {
namespace {

using testing::MaxAbsDiff;
using testing::SpecOf;

// A video request whose memory the planner can cut in the DiT (materialised attention in
// query chunks) and in the VAE (frame slices, tiles).
DiffusionRequest VideoRequest() {
  DiffusionRequest r;
  r.model = "tiny-t2v";
  r.width = 64;
  r.height = 64;
  r.frames = 9;
  r.steps = 3;
  r.attention = models::AttentionMode::kChunked;
  r.attention_chunks = 1;
  return r;
}

MitigationPlanOptions Options(int64_t budget) {
  MitigationPlanOptions o;
  o.budget_bytes = budget;
  o.repeats = 1;
  o.candidates.ffn_chunks = {2, 8};
  o.candidates.attention_chunks = {2, 8};
  o.candidates.vae_slices = {2, 4};
  o.candidates.vae_tiles = {2};
  return o;
}

// Every candidate of Options() at its strongest: the least the request can need.
DiffusionRequest Strongest(DiffusionRequest r) {
  r.attention_chunks = 8;
  r.vae_frame_slices = 4;
  r.ffn_chunks = 8;
  r.vae_tiles = 2;
  return r;
}

int64_t PeakOf(const TinyModelSpec& spec, const DiffusionRequest& r) {
  auto rec = RecordRequest(spec, r);
  CHECK(rec.ok()) << rec.status().ToString();
  return rec->measured_peak_bytes;
}

TEST(MitigationPlannerTest, NothingIsAppliedWhenTheRequestFits) {
  const DiffusionRequest r = VideoRequest();
  const TinyModelSpec spec = SpecOf(r);
  const int64_t peak = PeakOf(spec, r);
  auto plan = PlanMitigations(spec, r, Options(peak));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->fits);
  EXPECT_EQ(plan->excess_bytes, 0);
  EXPECT_EQ(plan->base_peak_bytes, peak);  // the trace's peak is the allocator's, to the byte
  EXPECT_EQ(plan->runs, 1);
  for (const std::string& l : plan->labels) EXPECT_EQ(l, "off");
  EXPECT_EQ(plan->request.attention_chunks, 1);
  EXPECT_EQ(plan->request.vae_frame_slices, 1);
}

TEST(MitigationPlannerTest, FitsATightBudgetOnlyAsMuchAsNeededAndKeepsTheOutput) {
  const DiffusionRequest r = VideoRequest();
  const TinyModelSpec spec = SpecOf(r);
  const int64_t peak = PeakOf(spec, r);
  const int64_t floor = PeakOf(spec, Strongest(r));
  ASSERT_LT(floor, peak);
  for (const double f : {0.25, 0.6, 0.95}) {
    const int64_t budget = floor + static_cast<int64_t>(f * static_cast<double>(peak - floor));
    // Times on a busy test host are noise at this size: tie them all, so that the memory
    // property is what is checked (the time choice is tested on the MILP, mitigation_milp_test).
    MitigationPlanOptions o = Options(budget);
    o.time_tolerance_fraction = 1.0;
    auto plan = PlanMitigations(spec, r, o);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    SCOPED_TRACE(ToJson(*plan).dump());
    EXPECT_TRUE(plan->fits);
    EXPECT_LE(plan->verified_peak_bytes, budget);
    EXPECT_GT(plan->excess_bytes, 0);
    EXPECT_TRUE(plan->only_as_needed);
    EXPECT_LE(plan->saved_bytes, plan->excess_bytes + plan->granularity_bytes);
    EXPECT_GE(plan->saved_bytes, plan->excess_bytes);
    // The plan's request really runs at its verified peak, with the unmitigated output.
    auto base = RecordRequest(spec, r);
    auto mitigated = RecordRequest(spec, plan->request);
    ASSERT_TRUE(base.ok() && mitigated.ok());
    EXPECT_EQ(mitigated->measured_peak_bytes, plan->verified_peak_bytes);
    EXPECT_LE(MaxAbsDiff(base->output, mitigated->output), 1e-6);
  }
}

TEST(MitigationPlannerTest, ReportsTheShortfallBelowTheFloor) {
  const DiffusionRequest r = VideoRequest();
  const TinyModelSpec spec = SpecOf(r);
  const int64_t floor = PeakOf(spec, Strongest(r));
  auto plan = PlanMitigations(spec, r, Options(floor - (1 << 20)));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->fits);
  EXPECT_GT(plan->shortfall_bytes, 0);
  EXPECT_GT(plan->verified_peak_bytes, floor - (1 << 20));
}

TEST(MitigationPlannerTest, RejectsBadInput) {
  const DiffusionRequest r = VideoRequest();
  const TinyModelSpec spec = SpecOf(r);
  MitigationPlanOptions o = Options(100);
  o.reserve_bytes = 200;
  EXPECT_NE(PlanMitigations(spec, r, o).status().message().find("budget_bytes: got 100"),
            std::string::npos);
  DiffusionRequest bad = r;
  bad.frames = 4;
  EXPECT_NE(PlanMitigations(spec, bad, Options(1 << 30)).status().message().find("frames"),
            std::string::npos);
  MitigationProblem p;
  p.actions = {{"ffn_chunks", {{"off", 0}, {"ffn_chunks=x", 0}}}};
  EXPECT_FALSE(ApplyChoice(r, p, {1}).ok());
  EXPECT_FALSE(ApplyChoice(r, p, {2}).ok());
  EXPECT_FALSE(ApplyChoice(r, p, {}).ok());
  MitigationPlanOptions t = Options(1 << 30);
  t.time_tolerance_fraction = -0.1;
  EXPECT_NE(PlanMitigations(spec, r, t).status().message().find("time_tolerance_fraction"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::xema

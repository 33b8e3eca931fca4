#include "xema/planner/modeled_profile.h"

#include <gtest/gtest.h>

#include "xema/serve/load_mix.h"

namespace tessera::xema {
namespace {

ServingPlannerOptions PaperOptions(const std::string& mix_json, int devices, double rate,
                                   double slo_scale) {
  ServingPlannerOptions o;
  auto mix = MixFromJson(core::ParseJson(mix_json, "mix").value(), "mix", MixModels::kAnalytic);
  EXPECT_TRUE(mix.ok()) << mix.status().message();
  if (mix.ok()) o.mix = *mix;
  o.devices = devices;
  o.rate_rps = rate;
  o.slo_scale = slo_scale;
  o.duration_s = 600;
  o.max_concurrency = 2;
  o.max_batch = 1;  // batches: BatchesAreOfferedAndNeverEndTheSearchLower
  return o;
}

const char kCog[] = R"([{"model":"cogvideox-5b","size":"720x480","frames":49,"steps":50}])";

TEST(ModeledPlannerTest, SequenceParallelismIsChosenWhenTheSloNeedsIt) {
  const ModeledDevice h100 = FindModeledDevice("h100-80g").value();
  // CogVideoX-5B 720x480x49, 50 steps: about 90 s alone on one GPU (modeled). An SLO of half
  // that is met only across 4 or more GPUs.
  ServingPlannerOptions tight = PaperOptions(kCog, 8, 0.02, 0.5);
  tight.budget_bytes = h100.memory_bytes;
  auto r = PlanModeledServing(tight, h100);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->plan.entries.size(), 1u);
  const ServingPlanEntry& e = r->plan.entries[0];
  EXPECT_GE(e.sp_degree, 4);
  EXPECT_EQ(e.replicas, 8 / e.sp_degree);
  EXPECT_LT(e.solo_s, e.slo_s);
  EXPECT_GT(r->score.attainment, 0.9);
  EXPECT_EQ(r->plan.label, "modeled");
  EXPECT_EQ(r->plan.device, "h100-80g");

  // On one GPU no SP degree is left: the same SLO is never met.
  ServingPlannerOptions one = tight;
  one.devices = 1;
  auto single = PlanModeledServing(one, h100);
  ASSERT_TRUE(single.ok()) << single.status().message();
  EXPECT_EQ(single->plan.entries[0].sp_degree, 1);
  EXPECT_EQ(single->score.attainment, 0);
  // Nor with eight GPUs when SP is held to 1 (--max-sp 1).
  ServingPlannerOptions no_sp = tight;
  no_sp.max_sp_degree = 1;
  auto held = PlanModeledServing(no_sp, h100);
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_EQ(held->plan.entries[0].sp_degree, 1);
  EXPECT_EQ(held->score.attainment, 0);

  // The table reads back, and a server on this host refuses it (another device).
  auto back = ServingPlanFromJson(ToJson(r->plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->entries[0].key, r->plan.entries[0].key);
  core::Json bad = ToJson(r->plan);
  bad["entries"][0]["sp_degree"] = 3;
  auto refused = ServingPlanFromJson(bad, "plan.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("sp_degree: got 3, must divide the 8 devices"),
            std::string::npos)
      << refused.status().message();
  auto fits =
      CheckPlanFitsServer(*back, "plan.json", h100.memory_bytes, 8, r->plan.model_weight_bytes);
  EXPECT_NE(fits.message().find("device: got 'h100-80g'"), std::string::npos) << fits.message();
}

TEST(ModeledPlannerTest, Flux2AtEightyGigabytesKeepsItsEncoderOnTheHost) {
  // 24B encoder + 32B DiT in bf16: 112 GB of weights; an 80 GB device holds the DiT only.
  const char mix[] = R"([{"model":"flux2-dev","size":"1024x1024","steps":28}])";
  const ModeledDevice h100 = FindModeledDevice("h100-80g").value();
  ServingPlannerOptions o = PaperOptions(mix, 8, 0.5, 3);
  o.budget_bytes = h100.memory_bytes;
  auto r = PlanModeledServing(o, h100);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->plan.planner["encoders_on_host"], core::Json({"flux2-dev"}));
  EXPECT_TRUE(r->plan.entries[0].request.offload.idle_weights);
  EXPECT_LT(r->plan.model_weight_bytes.at("flux2-dev"), int64_t{70'000'000'000});
  // 141 GB holds every weight: no subset is refused.
  const ModeledDevice h200 = FindModeledDevice("h200-141g").value();
  o.budget_bytes = h200.memory_bytes;
  r = PlanModeledServing(o, h200);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->plan.planner["encoder_subsets_planned"], 2);
}

TEST(ModeledPlannerTest, BatchesAreOfferedAndNeverEndTheSearchLower) {
  // LTX-2's three templates on eight H100s at about 70% load (bench/xema/paper_tables.sh):
  // too many configurations for an exhaustive search with batches, so the search is the
  // batch-1 space exhaustively, then a descent over everything from its best.
  const char mix[] = R"([{"model":"ltx-2","size":"768x512","frames":49,"steps":40,"weight":2},
                         {"model":"ltx-2","size":"768x512","frames":121,"steps":40,"weight":2},
                         {"model":"ltx-2","size":"1216x704","frames":121,"steps":40}])";
  const ModeledDevice h100 = FindModeledDevice("h100-80g").value();
  ServingPlannerOptions o = PaperOptions(mix, 8, 0.10, 2);
  o.budget_bytes = h100.memory_bytes;
  o.max_concurrency = 3;
  o.max_batch = 2;
  o.duration_s = 1200;
  auto profile = ModelServingProfile(o, h100, {"ltx-2"});
  ASSERT_TRUE(profile.ok()) << profile.status().message();
  for (const TemplateProfile& t : profile->templates) {
    int batched = 0;
    for (const TemplateVariant& v : t.variants) {
      ASSERT_EQ(v.batch_s.size(), static_cast<size_t>(v.batch));
      if (v.batch == 1) continue;
      ++batched;
      // Each larger batch takes longer (more work); whether it beats b runs of one depends on
      // how it fills the GPU's waves (the analytic test checks one that does).
      for (size_t k = 1; k < v.batch_s.size(); ++k) EXPECT_GT(v.batch_s[k], v.batch_s[k - 1]);
    }
    EXPECT_EQ(batched * 2, static_cast<int>(t.variants.size()));  // batch 1 and 2 of each
  }
  auto with = PlanModeledServing(o, h100);
  ServingPlannerOptions b1 = o;
  b1.max_batch = 1;
  auto without = PlanModeledServing(b1, h100);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_GE(with->score.attainment, without->score.attainment);
  for (const ServingPlanEntry& e : without->plan.entries) EXPECT_EQ(e.batch, 1);
  auto back = ServingPlanFromJson(ToJson(with->plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
}

TEST(ModeledPlannerTest, BadInputIsNamed) {
  const ModeledDevice h100 = FindModeledDevice("h100-80g").value();
  ServingPlannerOptions o = PaperOptions(kCog, 8, 0.02, 3);
  o.budget_bytes = 1'000'000'000;  // 1 GB: not even the DiT's weights
  auto r = PlanModeledServing(o, h100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("budget: got 1000000000 bytes"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument);
  // Each subset's profile says Infeasible (so the search skips it, by code, not by message).
  EXPECT_EQ(ModelServingProfile(o, h100, {}).status().code(), core::StatusCode::kInfeasible);
  EXPECT_EQ(ModelServingProfile(o, h100, {"cogvideox-5b"}).status().code(),
            core::StatusCode::kInfeasible);
  auto mix = MixFromJson(core::ParseJson(R"([{"model":"tiny-t2i"}])", "m").value(), "m",
                         MixModels::kAnalytic);
  ASSERT_FALSE(mix.ok());
  EXPECT_NE(mix.status().message().find("mix[0].model: got 'tiny-t2i', must be one of flux2-dev"),
            std::string::npos)
      << mix.status().message();
  mix = MixFromJson(core::ParseJson(R"([{"model":"ltx-2","size":"768x512"}])", "m").value(), "m",
                    MixModels::kAnalytic);
  ASSERT_FALSE(mix.ok());
  EXPECT_NE(mix.status().message().find("frames: required"), std::string::npos);
  EXPECT_FALSE(FindModeledDevice("a100-40g").ok());
}

}  // namespace
}  // namespace tessera::xema

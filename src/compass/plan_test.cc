// The planner: a layer's TP operators from model shapes, the tile/wave GEMM model, and a plan
// on a preset topology (every pick no slower than none, totals add up, the TE settings and
// the trace cover every operator); bad input names the field and value.
#include "compass/plan.h"

#include <gtest/gtest.h>

#include "compass/paper_grid.h"

namespace tessera::compass {
namespace {

hw::Topology PlanTopology(const std::string& name) {
  auto t = hw::TopologyPreset(name);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

TEST(ModelShapes, LayerOperatorsOfLlama) {
  auto m = LoadTransformerShape("llama2-7b");
  ASSERT_TRUE(m.ok());
  auto ops = LayerOps(*m, 8, 4096);
  ASSERT_TRUE(ops.ok()) << ops.status().ToString();
  ASSERT_EQ(ops->size(), 12u);
  EXPECT_EQ((*ops)[0].name, "qkv");
  EXPECT_EQ((*ops)[0].shape.n, 3 * 4096 / 8);
  EXPECT_EQ((*ops)[0].shape.k, 4096);
  EXPECT_EQ((*ops)[2].shape.n, 2 * 11008 / 8);  // SwiGLU: gate and up
  EXPECT_EQ((*ops)[3].shape.kind, TpOpKind::kGemmReduceScatter);
  EXPECT_EQ((*ops)[3].shape.k, 11008 / 8);
  EXPECT_FALSE((*ops)[10].has_collective);
  // Grouped-query attention: 8 KV heads of 128.
  auto l3 = LoadTransformerShape("llama3-8b");
  ASSERT_TRUE(l3.ok());
  EXPECT_EQ((*LayerOps(*l3, 8, 4096))[0].shape.n, (4096 + 2 * 8 * 128) / 8);
}

TEST(ModelShapes, BadInputNamesFieldAndValue) {
  auto m = LoadTransformerShape("llama2-7b");
  ASSERT_TRUE(m.ok());
  auto bad_tp = LayerOps(*m, 3, 4095);
  ASSERT_FALSE(bad_tp.ok());
  EXPECT_NE(bad_tp.status().message().find("heads: got 32, not divisible by tp 3"),
            std::string::npos)
      << bad_tp.status().message();
  auto bad_tokens = LayerOps(*m, 8, 4100);
  ASSERT_FALSE(bad_tokens.ok());
  EXPECT_NE(bad_tokens.status().message().find("got 4100"), std::string::npos);
  auto l70 = LoadTransformerShape("llama2-70b");
  ASSERT_TRUE(l70.ok());
  EXPECT_NE(LayerOps(*l70, 16, 4096).status().message().find("kv_heads: got 8"), std::string::npos);
  auto unknown = LoadTransformerShape("llama9");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("must be one of llama2-7b"), std::string::npos);
  core::Json j = {{"kind", "compass-model"}, {"version", 1}, {"name", "x"},
                  {"hidden", 100},           {"ffn", 400},   {"heads", 3},
                  {"kv_heads", 3},           {"layers", 2},  {"gated_mlp", false}};
  auto f = TransformerShapeFromJson(j, "m.json");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("m.json.hidden: got 100, not divisible by heads 3"),
            std::string::npos);
  j["heads"] = 4;
  j["kv_heads"] = 4;
  EXPECT_TRUE(TransformerShapeFromJson(j, "m.json").ok());
  j["gated_mlp"] = "yes";
  EXPECT_FALSE(TransformerShapeFromJson(j, "m.json").ok());
}

TEST(Plan, Llama7bOnA6000PicksNoWorseThanNone) {
  auto m = LoadTransformerShape("llama2-7b");
  ASSERT_TRUE(m.ok());
  PlanOptions o;
  o.tp = 8;
  o.seq = 4096;
  auto plan = PlanLayer(PlanTopology("a6000x8"), *m, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->ops.size(), 12u);
  double sum = 0, none = 0;
  for (const OpPlan& op : plan->ops) {
    EXPECT_LE(op.pick.predicted_s, op.none_s * (1 + 1e-12)) << op.op.name;
    EXPECT_GT(op.pick.predicted_s, 0) << op.op.name;
    EXPECT_FALSE(op.pick.reason.empty()) << op.op.name;
    EXPECT_EQ(op.gemm_source, "modeled (tile/wave)");
    sum += op.pick.predicted_s;
    none += op.none_s;
  }
  EXPECT_NEAR(plan->layer_s, sum, 1e-15);
  EXPECT_NEAR(plan->layer_none_s, none, 1e-15);
  EXPECT_NEAR(plan->step_s(), 32 * sum, 1e-12);
  // On a6000x8 the double ring is the fastest fused collective: some operator picks it.
  bool ring2 = false;
  for (const OpPlan& op : plan->ops) ring2 = ring2 || op.pick.strategy.Name() == "fused-ring2";
  EXPECT_TRUE(ring2);
  const core::Json te = TeUserbufferConfig(*plan);
  EXPECT_TRUE(te.contains("qkv_fprop"));
  EXPECT_TRUE(te.contains("fc1_dgrad"));
  EXPECT_TRUE(te.contains("qkv_wgrad"));
  EXPECT_FALSE(te.contains("proj_wgrad"));       // no collective of its own
  EXPECT_EQ(PlanTrace(*plan).size(), 2u + 24u);  // two track names, two spans per operator
  EXPECT_EQ(ToJson(*plan).at("ops").size(), 12u);
}

TEST(Plan, RefusesBadTpAndAProfileFromElsewhere) {
  auto m = LoadTransformerShape("llama2-7b");
  ASSERT_TRUE(m.ok());
  PlanOptions o;
  o.tp = 16;
  auto too_many = PlanLayer(PlanTopology("a6000x8"), *m, o);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("tp: got 16"), std::string::npos);
  o.tp = 4;
  CompassProfile p;
  p.topology = "h100x8";
  p.ranks = 4;
  auto other = PlanLayer(PlanTopology("a6000x8"), *m, o, &p, "--profile p.json");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("taken on topology h100x8"), std::string::npos);
  // A matching profile's GEMM table is used where shapes match.
  p.topology = "a6000x8";
  p.gemms.push_back({false, 4096, 3 * 4096 / 4, 4096, 1e-3});
  auto with = PlanLayer(PlanTopology("a6000x8"), *m, o, &p, "--profile p.json");
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  EXPECT_EQ(with->ops[0].gemm_source, "mixed");
  EXPECT_NE(with->overheads_source.find("p.json"), std::string::npos);
}

}  // namespace
}  // namespace tessera::compass

namespace tessera::compass {
namespace {

TEST(PaperGrid, CoversEveryOperatorAndNeverLosesToNone) {
  auto g = RunPaperGrid(PlanTopology("rtx4090x4"));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  // 4 models x TP 2, 4 (4 devices) x 6 token counts x 4 forward operators.
  EXPECT_EQ(g->points.size(), 4u * 2 * 6 * 4);
  EXPECT_TRUE(g->skipped.empty());
  for (const GridPoint& p : g->points) {
    ASSERT_TRUE(p.predicted_s.count("none") && p.predicted_s.count("auto")) << p.model;
    EXPECT_LE(p.predicted_s.at("auto"), p.predicted_s.at("none") * (1 + 1e-12));
  }
  const SpeedupStats all = SpeedupOverNone(*g, "auto");
  EXPECT_EQ(all.count, static_cast<int>(g->points.size()));
  EXPECT_GE(all.min, 1.0 - 1e-12);
  EXPECT_EQ(SpeedupOverNone(*g, "auto", "llama2-7b").count, 2 * 6 * 4);
  EXPECT_EQ(ToJson(*g).at("points").size(), g->points.size());
}

}  // namespace
}  // namespace tessera::compass

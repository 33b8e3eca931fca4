// The profile file: a round trip keeps every figure; bad files and a profile from another
// topology or TP degree are refused naming the field and value.
#include "compass/profile.h"

#include <gtest/gtest.h>

namespace tessera::compass {
namespace {

CompassProfile Sample() {
  CompassProfile p;
  p.topology = "a6000x8";
  p.ranks = 2;
  p.time_scale = 412.5;
  p.time_scale_source = "measured: test";
  p.machine = "test";
  p.repeats = 7;
  p.gemms = {{false, 128, 768, 512, 2.5e-6}, {true, 512, 768, 64, 1.25e-6}};
  p.links = {{"allgather", "ring1", 262144, 3.1e-5, 3.0e-5}};
  p.contention = {512, 1024, 1024, 1e-4, 1.2e-4};
  ProfiledOperator o;
  o.label = "qkv h512 M256";
  o.op = "ag-gemm";
  o.m = 256;
  o.n = 768;
  o.k = 512;
  o.t_by_d = {{1, 8.9e-6}, {2, 1.05e-5}, {16, 5.4e-5}};
  o.fit = {3e-6, 2e-6, 4e-6};
  o.d_star = 1;
  p.operators.push_back(o);
  p.classes["ag"] = {DegreeClassModel{2.8e-6, 1.9e-6, 1.13}, PipelineModel{2.5e-6, 1e-6, 1.2}};
  p.classes["rs"] = {DegreeClassModel{3e-6, -1e-7, 1.0}, PipelineModel{3e-6, 0, 1.5}};
  p.overheads[{StrategyFamily::kFusedRing2, "ag"}] = Overheads{1e-6, 2e-7, 1.1};
  p.overheads[{StrategyFamily::kDecomp, "rs"}] = Overheads{5e-7, 0, 1.3};
  return p;
}

TEST(CompassProfile, RoundTripKeepsEveryFigure) {
  const CompassProfile p = Sample();
  auto q = ProfileFromJson(ToJson(p), "p.json");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(ToJson(*q), ToJson(p));
  EXPECT_DOUBLE_EQ(q->contention.kappa(), 1.2);
  auto g = q->GemmSeconds(true, 512, 768, 64);
  ASSERT_TRUE(g.ok());
  EXPECT_DOUBLE_EQ(*g, 1.25e-6);
  EXPECT_EQ(q->GemmSeconds(false, 512, 768, 64).status().code(), core::StatusCode::kNotFound);
  EXPECT_EQ(q->operators[0].t_by_d.at(16), 5.4e-5);
  EXPECT_DOUBLE_EQ(q->classes.at("rs").pipeline.kappa, 1.5);
  EXPECT_DOUBLE_EQ((q->overheads.at({StrategyFamily::kFusedRing2, "ag"}).kappa), 1.1);
}

TEST(CompassProfile, RefusesBadFilesNamingFieldAndValue) {
  struct Case {
    std::function<void(core::Json&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](core::Json& j) { j["kind"] = "compass-grid"; }, "kind: got 'compass-grid'"},
      {[](core::Json& j) { j["version"] = 2; }, "version: got 2"},
      {[](core::Json& j) { j["tokns"] = 1; }, "unknown key 'tokns'"},
      {[](core::Json& j) { j["ranks"] = 0; }, "p.json.ranks"},
      {[](core::Json& j) { j["gemms"][0]["m"] = -1; }, "p.json.gemms[0].m"},
      {[](core::Json& j) { j["gemms"][1]["trans_a"] = 1; }, "gemms[1].trans_a: got 1"},
      {[](core::Json& j) { j["gemms"] = 3; }, "p.json.gemms: got 3, must be an array"},
      {[](core::Json& j) { j["operators"][0]["measured_s_by_degree"]["x2"] = 1e-6; },
       "key 'x2' is not a degree"},
      {[](core::Json& j) { j["classes"]["ag"]["pipeline"]["kappa"] = 0.5; },
       "classes.ag.pipeline.kappa"},
      {[](core::Json& j) { j["classes"]["mm"] = j["classes"]["ag"]; }, "unknown key 'mm'"},
      {[](core::Json& j) { j["contention"].erase("alone_s"); }, "alone_s"},
      {[](core::Json& j) { j["overheads"]["flux"] = j["overheads"]["decomp"]; },
       "unknown strategy family 'flux'"},
      {[](core::Json& j) { j["overheads"]["decomp"]["rs"]["kappa"] = 4; },
       "overheads.decomp.rs.kappa"},
  };
  for (const Case& c : cases) {
    core::Json j = ToJson(Sample());
    c.edit(j);
    auto q = ProfileFromJson(j, "p.json");
    ASSERT_FALSE(q.ok()) << c.message;
    EXPECT_EQ(q.status().code(), core::StatusCode::kInvalidArgument) << c.message;
    EXPECT_NE(q.status().message().find(c.message), std::string::npos)
        << q.status().message() << " lacks " << c.message;
  }
}

TEST(CompassProfile, RefusesAProfileFromAnotherTopologyOrDegree) {
  const CompassProfile p = Sample();
  EXPECT_TRUE(CheckProfileFor(p, "p.json", "a6000x8", 2).ok());
  const core::Status other = CheckProfileFor(p, "p.json", "h100x8", 2);
  EXPECT_EQ(other.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(other.message().find("taken on topology a6000x8 at TP 2, this run is h100x8 at TP 2"),
            std::string::npos)
      << other.message();
  EXPECT_FALSE(CheckProfileFor(p, "p.json", "a6000x8", 4).ok());
}

}  // namespace
}  // namespace tessera::compass

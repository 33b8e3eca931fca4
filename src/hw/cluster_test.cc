#include "hw/cluster.h"

#include <gtest/gtest.h>

namespace tessera::hw {
namespace {

TEST(ClusterTest, PresetsAreValidAndRoundTrip) {
  for (const auto& name : ClusterPresetNames()) {
    auto c = ClusterPreset(name);
    ASSERT_TRUE(c.ok()) << name;
    EXPECT_TRUE(Validate(*c).ok());
    EXPECT_EQ(c->provenance, "modeled from datasheets");
    auto back = ClusterFromJson(ToJson(*c), "rt");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(ToJson(*back), ToJson(*c));
  }
  EXPECT_EQ(ClusterPreset("a800x16")->num_ranks(), 16);
  EXPECT_EQ(ClusterPreset("a6000x32")->num_ranks(), 32);
  EXPECT_EQ(ClusterPreset("h100x64")->NodeOf(63), 7);
}

TEST(ClusterTest, UnknownPresetListsChoices) {
  auto c = LoadCluster("b200x8");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("a800x16"), std::string::npos);
}

TEST(ClusterTest, BadFieldsNameFieldAndValue) {
  core::Json j = ToJson(*ClusterPreset("a800x8"));
  j["nodes"] = 0;
  EXPECT_EQ(ClusterFromJson(j, "c.json").status().message(), "c.json: nodes: got 0, must be >= 1");
  j = ToJson(*ClusterPreset("a800x8"));
  j["device"]["memory_bytes"] = -5;
  EXPECT_EQ(ClusterFromJson(j, "c.json").status().message(),
            "c.json: device.memory_bytes: got -5, must be > 0");
  j = ToJson(*ClusterPreset("a800x8"));
  j["device"]["compute_efficiency"] = 1.5;
  EXPECT_FALSE(ClusterFromJson(j, "c.json").ok());
  j = ToJson(*ClusterPreset("a800x8"));
  j.erase("inter");
  EXPECT_EQ(ClusterFromJson(j, "c.json").status().message(),
            "c.json: inter: missing required field");
  EXPECT_FALSE(ClusterFromJson(core::Json::array(), "c.json").ok());
}

}  // namespace
}  // namespace tessera::hw

#include "models/dit_spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace tessera::models {
namespace {

TEST(DitSpecTest, SavedModelsReload) {
  for (const std::string& name : DitModelPresetNames()) {
    const DitModel m = *DitModelPreset(name);
    const std::string path =
        ::testing::TempDir() + "/dit_spec_test_" + std::to_string(getpid()) + ".json";
    ASSERT_TRUE(core::WriteJsonFile(path, ToJson(m)).ok());
    auto back = LoadDitModel(path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(ToJson(*back), ToJson(m));
    EXPECT_DOUBLE_EQ(back->params(), m.params());
    std::remove(path.c_str());
  }
}

// Every size is range-checked before it is narrowed to int, and the message names it.
TEST(DitSpecTest, SizesOutsideTheirRangesAreNamed) {
  const core::Json good = ToJson(*DitModelPreset("wan2.1-1.3b"));
  auto bad = [&](const std::string& key, const core::Json& value) {
    core::Json j = good;
    j[key] = value;
    auto m = DitModelFromJson(j, "m.json");
    EXPECT_EQ(m.status().code(), core::StatusCode::kInvalidArgument) << key;
    return m.status().message();
  };
  EXPECT_EQ(bad("hidden", int64_t{1} << 40),
            "m.json: hidden: got 1099511627776, must be in [1, 1048576]");
  EXPECT_EQ(bad("layers", 4294967297LL), "m.json: layers: got 4294967297, must be in [1, 1024]");
  EXPECT_EQ(bad("heads", 0), "m.json: heads: got 0, must be in [1, 4096]");
  EXPECT_EQ(bad("bytes_per_elem", 16), "m.json: bytes_per_elem: got 16, must be in [1, 8]");
  EXPECT_EQ(bad("text_tokens", -1), "m.json: text_tokens: got -1, must be in [0, 16777216]");
  EXPECT_EQ(bad("ffn", UINT64_MAX),
            "m.json: ffn: got 18446744073709551615, must be <= 9223372036854775807");
  EXPECT_EQ(bad("heads", 7), "m.json: heads: got 7, must divide hidden (1536)");
  // Models built in code are held to the same ranges.
  DitModel m = *DitModelPreset("wan2.1-1.3b");
  m.layers = 5000;
  EXPECT_EQ(Validate(m).message(), "layers: got 5000, must be <= 1024 (a plausible model)");
  m.layers = 0;
  EXPECT_EQ(Validate(m).message(), "layers: got 0, must be >= 1");
}

}  // namespace
}  // namespace tessera::models

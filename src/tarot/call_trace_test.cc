#include "tarot/call_trace.h"

#include <gtest/gtest.h>

namespace tessera::tarot {
namespace {

TEST(TarotCallTrace, CountsAndDeterministicJson) {
  CallTrace a, b;
  a.Add("reasoner", "Parse", "the red cup", "red cup", 12.5);
  a.Add("segmenter", "Text", "red cup", "1 instance", 3.0);
  a.Add("eri", "vote", "", "full");
  b.Add("reasoner", "Parse", "the red cup", "red cup", 99.0);
  b.Add("segmenter", "Text", "red cup", "1 instance", 1.0);
  b.Add("eri", "vote", "", "full");
  EXPECT_EQ(a.Calls("reasoner"), 1);
  EXPECT_EQ(a.Calls("segmenter"), 1);
  EXPECT_EQ(a.Calls("features"), 0);
  // Timing differs, yet the deterministic JSON is byte-equal and carries no "ms".
  EXPECT_EQ(a.ToJson(true).dump(), b.ToJson(true).dump());
  EXPECT_NE(a.ToJson(false).dump(), b.ToJson(false).dump());
  EXPECT_FALSE(a.ToJson(true)["entries"][0].contains("ms"));
  EXPECT_EQ(a.ToJson(false)["entries"][0]["ms"], 12.5);
  EXPECT_EQ(a.ToJson(true)["calls"]["segmenter"], 1);
}

}  // namespace
}  // namespace tessera::tarot

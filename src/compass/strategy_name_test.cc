// Strategy names: every family's name parses back to it, decomp:D round-trips for every D,
// and bad names are refused with a message quoting the text.
#include "compass/strategy_name.h"

#include <gtest/gtest.h>

namespace tessera::compass {
namespace {

TEST(StrategyName, EveryFamilyRoundTrips) {
  for (StrategyFamily f : AllStrategyFamilies()) {
    const StrategyName n = TakesDegree(f) ? StrategyName::Decomp(3) : StrategyName::Of(f);
    auto back = StrategyName::Parse(n.Name());
    ASSERT_TRUE(back.ok()) << n.Name() << ": " << back.status().ToString();
    EXPECT_EQ(*back, n) << n.Name();
    EXPECT_EQ(ParseStrategyFamily(StrategyFamilyName(f)), f);
  }
  for (int d = 1; d <= kMaxStrategyDegree; ++d) {
    auto back = StrategyName::Parse("decomp:" + std::to_string(d));
    ASSERT_TRUE(back.ok()) << d;
    EXPECT_EQ(back->family, StrategyFamily::kDecomp);
    EXPECT_EQ(back->degree, d);
    EXPECT_EQ(back->Name(), "decomp:" + std::to_string(d));
  }
  EXPECT_EQ(StrategyName::Of(StrategyFamily::kFusedRing2).Name(), "fused-ring2");
  EXPECT_EQ(StrategyName::Decomp(4).Name(), "decomp:4");
  // The degree is normalised: "010" is ten.
  EXPECT_EQ(StrategyName::Parse("decomp:010")->Name(), "decomp:10");
}

TEST(StrategyName, RefusesBadNamesWithTheExistingMessages) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"decomp", "strategy: got 'decomp', must be decomp:D with D the number of parts"},
           {"decomp:0",
            "strategy: got 'decomp:0': the degree got '0', must be an integer from 1 "
            "to 64"},
           {"decomp:65",
            "strategy: got 'decomp:65': the degree got '65', must be an integer "
            "from 1 to 64"},
           {"decomp:x", "strategy: got 'decomp:x': the degree"},
           {"none:2", "strategy: got 'none:2', none takes no degree"},
           {"fused-ring3",
            "strategy: got 'fused-ring3', must be one of none, fused-ring1, "
            "fused-ring2, fused-direct, decomp:D, te, mpi"},
           {"", "strategy: got '', must be one of"},
           {"Decomp:4", "strategy: got 'Decomp:4', must be one of"}}) {
    auto r = StrategyName::Parse(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(r.status().message().rfind(c.message, 0), 0u) << r.status().message();
  }
}

TEST(StrategyName, FamilyListsAgree) {
  EXPECT_EQ(AllStrategyFamilies().size(), 7u);
  EXPECT_EQ(FittedFamilyList(), "none, fused-ring1, fused-ring2, fused-direct, decomp");
  for (StrategyFamily f : SelectorFixedFamilies()) EXPECT_TRUE(IsFittedFamily(f));
  EXPECT_FALSE(IsFittedFamily(StrategyFamily::kTe));
  EXPECT_FALSE(IsFittedFamily(StrategyFamily::kMpi));
  EXPECT_FALSE(ParseStrategyFamily("decomp:4").has_value());
  EXPECT_LT(StrategyName::Decomp(2), StrategyName::Decomp(4));
}

}  // namespace
}  // namespace tessera::compass

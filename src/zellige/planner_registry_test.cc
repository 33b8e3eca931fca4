// The planner table on core::Registry: names, order, traits and messages callers rely on.
#include <gtest/gtest.h>

#include "zellige/planner.h"

namespace tessera::zellige {
namespace {

TEST(PlannerRegistry, NamesOrderAndTraits) {
  EXPECT_EQ(Planners().Names(),
            (std::vector<std::string>{"zellige", "joint", "joint-binary", "usp", "knapformer", "dp",
                                      "adaptiveload", "dynamic-cp"}));
  EXPECT_EQ(&PlannerRegistry(), &Planners().entries());
  std::vector<std::string> in_all, disjoint;
  for (const PlannerEntry& e : PlannerRegistry()) {
    EXPECT_FALSE(e.description.empty()) << e.name;
    EXPECT_NE(e.make(), nullptr) << e.name;
    if (e.in_all) in_all.push_back(e.name);
    if (e.disjoint_groups) disjoint.push_back(e.name);
  }
  EXPECT_EQ(in_all, (std::vector<std::string>{"zellige", "usp", "knapformer", "dp", "adaptiveload",
                                              "dynamic-cp"}));
  EXPECT_EQ(disjoint, (std::vector<std::string>{"usp", "knapformer", "dp", "adaptiveload"}));
}

TEST(PlannerRegistry, FindKeepsItsMessage) {
  auto z = FindPlanner("zellige");
  ASSERT_TRUE(z.ok());
  EXPECT_EQ((*z)->name, "zellige");
  auto x = FindPlanner("greedy");
  EXPECT_EQ(x.status().code(), core::StatusCode::kNotFound);
  EXPECT_EQ(x.status().message(),
            "planner: got 'greedy', must be one of zellige, joint, joint-binary, usp, knapformer, "
            "dp, adaptiveload, dynamic-cp or all");
}

TEST(PlannerRegistry, OptionKeysAreDeclared) {
  const PlannerEntry& knap = **FindPlanner("knapformer");
  EXPECT_TRUE(Planners().ValidateOptions(knap, {{"knapformer.bags", "g1n2"}}).ok());
  EXPECT_EQ(Planners().ValidateOptions(knap, {{"knapformer.bag", "g1n2"}}).message(),
            "planner 'knapformer': got option 'knapformer.bag', must be one of knapformer.bags, "
            "knapformer.gamma");
  EXPECT_EQ(
      Planners().ValidateOptions(**FindPlanner("dp"), {{"knapformer.bags", "g1n2"}}).message(),
      "planner 'dp': got option 'knapformer.bags', takes no options");
  // Options shared by every planner of a run: each key must be some planner's.
  EXPECT_TRUE(ValidatePlannerOptions({{"zellige.time_limit_s", "0.5"},
                                      {"joint.time_limit_s", "10"},
                                      {"knapformer.bags", "g1n2"}})
                  .ok());
  core::Status typo = ValidatePlannerOptions({{"zellige.gapp", "0.1"}});
  EXPECT_EQ(typo.code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(typo.message(),
            "planner options: got 'zellige.gapp', must be one of zellige.time_limit_s, "
            "zellige.gap, zellige.split_time_limit_s, zellige.split_tolerance, "
            "zellige.split_bytes_weight, zellige.total_time_limit_s, zellige.cell_ranks, "
            "zellige.threads, zellige.reuse_cells, joint.time_limit_s, joint.gap, knapformer.bags, "
            "knapformer.gamma");
}

// A front end's flag (--time-limit) and the same key as --option: refused, not one silently
// overriding the other.
TEST(PlannerRegistryTest, SetOptionOnceRefusesAKeyGivenTwice) {
  PlannerOptions o;
  ASSERT_TRUE(SetOptionOnce(&o, "joint.time_limit_s", 2.5, "--joint-time-limit").ok());
  EXPECT_EQ(o.at("joint.time_limit_s"), "2.5");
  EXPECT_EQ(SetOptionOnce(&o, "joint.time_limit_s", 9, "--joint-time-limit").message(),
            "joint.time_limit_s: set twice, by --joint-time-limit and as a planner option ('2.5'); "
            "give one");
  EXPECT_EQ(o.at("joint.time_limit_s"), "2.5");
}

}  // namespace
}  // namespace tessera::zellige

// `tessera xema deployed` end to end: one modeled point printed with every policy and written as
// JSON, and the bad input the issue lists refused with exit 1 and one line naming the value.
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_test_util.h"
#include "core/json_util.h"

namespace tessera::cli {
namespace {

using testing::ExpectUserError;
using testing::ReadWhole;
using testing::Result;
using testing::RunTessera;
using testing::TempPath;

constexpr const char* kPoint =
    "xema deployed --devices h100-80g --gpus 2 --models cogvideox-5b --loads 0.9 --requests 100";

TEST(XemaDeployedCli, OnePointPrintsEveryPolicyAndWritesJson) {
  const std::string json = TempPath("deployed.json");
  Result r = RunTessera(std::string(kPoint) + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* policy :
       {"xema", "xema+shed", "diffusers-model-offload", "diffusers-sequential-offload",
        "vae-slicing-tiling", "xdit-fixed-sp:2", "fsdp-sharded-weights:2"}) {
    EXPECT_NE(r.out.find(policy), std::string::npos) << policy << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("modeled"), std::string::npos);
  const core::Json j = core::ParseJson(ReadWhole(json), json).value();
  EXPECT_EQ(j["label"], "modeled");
  ASSERT_EQ(j["points"].size(), 1u);
  EXPECT_EQ(j["points"][0]["rows"].size(), 7u);
  EXPECT_EQ(j["points"][0]["rows"][0]["policy"], "xema");
}

TEST(XemaDeployedCli, ABudgetBelowAPolicysFootprintIsInfeasibleNotZero) {
  // Flux.2's 64 GB transformer on a 24 GB card: the resident configurations cannot run at all.
  Result r = RunTessera(
      "xema deployed --devices rtx4090-24g --gpus 1 --models flux2-dev --loads 0.3 "
      "--requests 50 --policies vae-slicing-tiling,diffusers-sequential-offload");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("infeasible"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("xema infeasible"), std::string::npos) << r.out;
}

TEST(XemaDeployedCli, BadInputIsOneLineNamingIt) {
  const std::string point = kPoint;
  ExpectUserError(point + " --policies sglang", "got 'sglang'");
  ExpectUserError(point + " --policies xdit-fixed-sp:4", "divide the 2 devices");
  ExpectUserError(point + " --policies xdit-fixed-sp:x", "xdit-fixed-sp:x");
  ExpectUserError("xema deployed --devices a100 --gpus 1 --loads 0.5", "got 'a100'");
  ExpectUserError("xema deployed --models sd3 --gpus 1 --loads 0.5", "got 'sd3'");
  ExpectUserError("xema deployed --loads 0 --gpus 1", "--loads");
  ExpectUserError("xema deployed --gpus 0", "--gpus");
}

}  // namespace
}  // namespace tessera::cli

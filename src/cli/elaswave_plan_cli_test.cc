// `tessera elaswave plan`: the recovery plan for a set of dead ranks, printed without starting
// any process -- pipelines, transfers, DVFS speeds, step and power (modeled) -- and its JSON;
// every bad input is refused with exit 1 and one line naming the flag and the value.
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_test_util.h"
#include "core/json_util.h"

namespace tessera::cli {
namespace {

using testing::ExpectUserError;
using testing::Result;
using testing::RunTessera;
using testing::TempPath;

TEST(ElasWavePlanCli, PrintsThePlanTransfersAndDvfs) {
  const std::string json = TempPath("plan.json");
  Result r = RunTessera("elaswave plan --dp 2 --pp 2 --tp 2 --dead 5 --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* needle :
       {"gpt-mini, dp 2 x pp 2 x tp 2, 16 micro-batches of 2 sequences; dead: 5",
        "live pipelines after the change (epoch 1", "spares (live, computing nothing): 4",
        "[0, 10) embedding..head", "transfers (state a new holder",
        "moved: ", "step, power and energy per step (modeled)", "step s (1F1B)", "power W",
        "energy per step J", "DVFS: speeds in [0.6, 1.15]"}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  }
  auto j = core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["kind"], "modeled");
  EXPECT_EQ((*j)["model"], "gpt-mini");
  EXPECT_EQ((*j)["dead"], core::Json::array({5}));
  ASSERT_EQ((*j)["stages"].size(), 3u);
  EXPECT_EQ((*j)["stages"][2]["ranks"], core::Json::array({6, 7}));
  int64_t bytes = 0;
  for (const core::Json& t : (*j)["transfers"]) {
    EXPECT_TRUE(t["dst"] == 6 || t["dst"] == 7) << t.dump();
    bytes += t["bytes"].get<int64_t>();
  }
  EXPECT_EQ((*j)["moved_bytes"], bytes);
  const core::Json& dvfs = (*j)["dvfs"];
  if (dvfs["feasible"].get<bool>()) {
    EXPECT_LE(dvfs["power_w"].get<double>(), dvfs["power_cap_w"].get<double>());
  }
}

TEST(ElasWavePlanCli, InfeasibleDvfsIsReportedNotFatal) {
  Result r = RunTessera("elaswave plan --dp 2 --pp 2 --tp 1 --dead 3 --dvfs-range 1.9,2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("infeasible (dvfs: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the figures at f = 1 stand"), std::string::npos) << r.out;
}

TEST(ElasWavePlanCli, BadInputIsOneLineNamingTheFlag) {
  ExpectUserError("elaswave plan --dp 2 --pp 2 --tp 2 --dead 5,5", "--dead: rank 5 is named twice");
  ExpectUserError("elaswave plan --dp 2 --pp 2 --tp 2 --dead 8",
                  "--dead: rank 8 is outside [0, 8)");
  ExpectUserError("elaswave plan --dead=-1", "--dead");
  ExpectUserError("elaswave plan --dp 2", "--dead");  // required
  ExpectUserError("elaswave plan --dead 1 --dvfs-range 1.2,1.1",
                  "--dvfs-range: f_min: got 1.2, above f_max 1.1");
  ExpectUserError("elaswave plan --dead 1 --dvfs-range 0.6,2.5", "--dvfs-range");
  ExpectUserError("elaswave plan --dead 1 --dvfs-range 0,1", "--dvfs-range");
  ExpectUserError("elaswave plan --dead 1 --dvfs-range 0.6", "--dvfs-range: got 1 values");
  ExpectUserError("elaswave plan --dp 2 --pp 2 --tp 2 --dead 0,4",
                  "unrecoverable: embedding (tp rank 0) was held by ranks 0, 4 only, all dead");
  ExpectUserError("elaswave plan --dp 2 --pp 2 --tp 1 --dead 0,1,2,3",
                  "unrecoverable: no pipeline has a live tensor-parallel group left");
  ExpectUserError("elaswave plan --pp 9 --dead 1", "--pp: got 9");
}

}  // namespace
}  // namespace tessera::cli

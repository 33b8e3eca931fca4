// Xema's load generator over a DiffusionServer: the template mix, a low-rate run, a template
// refused alone (507). The engine's own tests are in serve/loadgen_test.cc.
#include "xema/serve/loadgen.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "xema/serve/server.h"

namespace tessera::xema {
namespace {

TEST(LoadMixTest, InlineMixAndBadTemplatesNamed) {
  auto mix = ReadMix(R"([{"model": "tiny-t2i", "size": "16x16", "steps": 1, "weight": 3},
                         {"model": "tiny-t2v", "size": "16x16", "frames": 5, "steps": 1}])");
  ASSERT_TRUE(mix.ok()) << mix.status().ToString();
  EXPECT_EQ(mix->size(), 2u);
  EXPECT_EQ((*mix)[0].weight, 3);
  EXPECT_TRUE((*mix)[1].video);
  auto error = [](const std::string& spec) {
    auto m = ReadMix(spec);
    return m.ok() ? std::string() : m.status().message();
  };
  EXPECT_NE(error("[]").find("must be an array of 1 to"), std::string::npos);
  EXPECT_NE(error(R"([{"model": "tiny-t2i", "steps": 0}])").find("mix[0].steps: got 0"),
            std::string::npos);
  EXPECT_NE(error(R"([{"model": "tiny-t2i", "weight": 0}])").find("mix[0].weight"),
            std::string::npos);
  EXPECT_NE(error(R"([{"model": "tiny-t2i", "sise": "1x1"}])").find("unknown key 'sise'"),
            std::string::npos);
  EXPECT_NE(error(R"([{"model": "sdxl"}])").find("mix[0].model"), std::string::npos);
  EXPECT_NE(error("/nonexistent/mix.json").find("/nonexistent/mix.json"), std::string::npos);
}

// 4 requests/s for 1 s; a generous SLO: the tests check completion, not speed.
LoadgenOptions LowRate(const std::string& url, uint64_t seed,
                       const std::vector<LoadTemplate>& mix) {
  LoadgenOptions o;
  o.url = url;
  o.rate_rps = 4;
  o.duration_s = 1;
  o.seed = seed;
  o.slo_scale = 1000;
  o.mix = mix;
  return o;
}

TEST(LoadgenTest, LowRateAgainstAnInProcessServerCompletesAll) {
  ServerOptions so;
  so.budget_bytes = int64_t{1} << 30;
  so.http_threads = 8;
  auto server = DiffusionServer::Start(so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto mix = ReadMix(R"([{"model": "tiny-t2i", "size": "16x16", "steps": 1, "guidance": 1}])");
  ASSERT_TRUE(mix.ok());
  LoadgenOptions o = LowRate((*server)->url(), 3, *mix);
  int64_t last_done = -1;
  o.progress = [&](int64_t done, int64_t) { last_done = done; };
  auto r = RunLoadgen(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->planned, 0);
  EXPECT_EQ(r->sent, r->planned);
  EXPECT_EQ(r->completed, r->planned);
  EXPECT_EQ(r->status_counts[200], r->planned);
  EXPECT_EQ(r->slo_met, r->planned);
  EXPECT_EQ(r->slo_attainment, 1.0);
  EXPECT_EQ(last_done, r->planned);
  EXPECT_GT(r->templates[0].solo_latency_s, 0);
  const core::Json j = ToJson(*r, o);
  EXPECT_EQ(j["completed"], r->planned);
  // Server metrics saw the solo requests and every load request.
  EXPECT_EQ((*server)->Metrics()["status"]["200"], r->planned + kSoloRuns);
  // Every request is kept; attainment at another SLO comes from them.
  ASSERT_EQ(static_cast<int64_t>(r->outcomes.size()), r->sent);
  const std::vector<double> own = {r->templates[0].solo_latency_s};
  EXPECT_EQ(AttainmentAt(*r, own, 1000), r->slo_attainment);
  double slowest = 0;
  for (const RequestOutcome& out : r->outcomes) slowest = std::max(slowest, out.latency_s);
  EXPECT_EQ(AttainmentAt(*r, {slowest}, 1.0), 1.0);
  EXPECT_LT(AttainmentAt(*r, {slowest / 2}, 1.0), 1.0);
  EXPECT_EQ(AttainmentAt(*r, {0.0}, 1000), 0.0);
  // A given reference replaces the server's own solo latency.
  o.reference_solo_s = {1e-9};
  auto tight = RunLoadgen(o);
  ASSERT_TRUE(tight.ok()) << tight.status().ToString();
  EXPECT_EQ(tight->slo_met, 0);
  o.reference_solo_s = {1.0, 2.0};
  EXPECT_NE(RunLoadgen(o).status().message().find("reference_solo_s: got 2 values for 1"),
            std::string::npos);
}

TEST(LoadgenTest, TemplateRefusedAloneIsReportedAndNeverMeetsItsSlo) {
  DiffusionRequest big;
  big.width = big.height = 128;
  big.steps = 1;
  ServerOptions so;
  so.budget_bytes = MinimumPeakBytes(*TinyModel("tiny-t2i"), big) + 1;  // 128x128 runs out
  so.http_threads = 8;
  auto server = DiffusionServer::Start(so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto mix = ReadMix(R"([{"model": "tiny-t2i", "size": "16x16", "steps": 1, "guidance": 1},
                         {"model": "tiny-t2i", "size": "128x128", "steps": 1, "guidance": 1}])");
  ASSERT_TRUE(mix.ok());
  LoadgenOptions o = LowRate((*server)->url(), 4, *mix);
  auto r = RunLoadgen(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->templates[0].solo_error.empty());
  EXPECT_NE(r->templates[1].solo_error.find("HTTP 507"), std::string::npos);
  EXPECT_EQ(r->templates[1].slo_met, 0);
  EXPECT_EQ(r->status_counts[507], r->templates[1].sent);
  EXPECT_EQ(r->slo_met, r->templates[0].sent);
}

}  // namespace
}  // namespace tessera::xema

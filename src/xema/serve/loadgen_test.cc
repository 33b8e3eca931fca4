#include "xema/serve/loadgen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "xema/serve/server.h"

namespace tessera::xema {
namespace {

TEST(ArrivalsTest, RateAndBurstinessAsAsked) {
  auto p = serve::ArrivalTimes(serve::ArrivalKind::kPoisson, 100, 1, 100, 7);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(static_cast<double>(p->size()), 10000, 400);
  EXPECT_EQ(*p, *serve::ArrivalTimes(serve::ArrivalKind::kPoisson, 100, 1, 100, 7));  // seeded
  for (double cv : {0.5, 2.0}) {
    auto g = serve::ArrivalTimes(serve::ArrivalKind::kGamma, 100, cv, 200, 3);
    ASSERT_TRUE(g.ok());
    double sum = 0, sum2 = 0, prev = 0;
    for (double t : *g) {
      sum += t - prev;
      sum2 += (t - prev) * (t - prev);
      prev = t;
    }
    const double n = static_cast<double>(g->size());
    const double mean = sum / n;
    EXPECT_NEAR(mean, 0.01, 0.001) << cv;
    EXPECT_NEAR(std::sqrt(sum2 / n - mean * mean) / mean, cv, 0.1 * cv) << cv;
  }
  EXPECT_FALSE(serve::ArrivalTimes(serve::ArrivalKind::kPoisson, 0, 1, 1, 1).ok());
  EXPECT_FALSE(serve::ArrivalTimes(serve::ArrivalKind::kGamma, 1, 0, 1, 1).ok());
  EXPECT_FALSE(serve::ArrivalTimes(serve::ArrivalKind::kPoisson, 1e6, 1, 1e6, 1).ok());
  EXPECT_FALSE(serve::ParseArrivalKind("uniform").ok());
}

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

TEST(LoadgenTest, UrlsAreChecked) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(ParseHttpUrl("http://127.0.0.1:8000", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8000);
  for (const char* bad : {"127.0.0.1:80", "https://x:1", "http://x", "http://x:0", "http://:80",
                          "http://a b:80", "http://x:99999"}) {
    EXPECT_FALSE(ParseHttpUrl(bad, &host, &port).ok()) << bad;
  }
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

TEST(ArrivalsTest, RecordedTraceIsReadAndBadEntriesNamed) {
  auto t = serve::ArrivalTraceFromJson(core::Json::parse(R"([{"at_s": 0, "template": 1},
      {"at_s": 0.25, "template": 0}, {"at_s": 0.25, "template": 1}])"),
                                       "trace.json", 2);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[1].at_s, 0.25);
  EXPECT_EQ((*t)[2].template_index, 1);
  auto message = [](const char* text, int templates) {
    auto r = serve::ArrivalTraceFromJson(core::Json::parse(text), "trace.json", templates);
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(message(R"([{"at_s": 1, "template": 2}])", 2).find("trace.json[0].template"),
            std::string::npos);
  EXPECT_NE(message(R"([{"at_s": 1, "template": 0}, {"at_s": 0.5, "template": 0}])", 1)
                .find("trace.json[1].at_s: got 0.5, before the previous arrival"),
            std::string::npos);
  EXPECT_NE(message(R"([{"at_s": -1, "template": 0}])", 1).find("trace.json[0].at_s"),
            std::string::npos);
  EXPECT_NE(message(R"([{"at": 1, "template": 0}])", 1).find("unknown key 'at'"),
            std::string::npos);
  EXPECT_NE(message("[]", 1).find("non-empty array"), std::string::npos);
  EXPECT_NE(message("{}", 1).find("non-empty array"), std::string::npos);
}

TEST(LoadgenTest, RecordedTraceIsSentAsRecorded) {
  ServerOptions so;
  so.budget_bytes = int64_t{1} << 30;
  so.http_threads = 8;
  auto server = DiffusionServer::Start(so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto mix = ReadMix(R"([{"model": "tiny-t2i", "size": "16x16", "steps": 1, "guidance": 1},
                         {"model": "tiny-t2i", "size": "32x16", "steps": 1, "guidance": 1}])");
  ASSERT_TRUE(mix.ok());
  LoadgenOptions o = LowRate((*server)->url(), 3, *mix);
  o.trace = {{0.0, 1}, {0.1, 1}, {0.3, 0}};
  auto r = RunLoadgen(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->planned, 3);
  EXPECT_EQ(r->completed, 3);
  EXPECT_EQ(r->templates[0].sent, 1);
  EXPECT_EQ(r->templates[1].sent, 2);
  EXPECT_EQ(ToJson(*r, o)["arrivals"], "trace");
  o.trace = {{0.0, 2}};
  EXPECT_NE(RunLoadgen(o).status().message().find("trace: template 2 is not in the mix of 2"),
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

TEST(LoadgenTest, UnreachableServerIsOneLine) {
  LoadgenOptions o;
  o.url = "http://127.0.0.1:1";
  o.duration_s = 1;
  auto mix = ReadMix(R"([{"model": "tiny-t2i", "size": "16x16", "steps": 1}])");
  o.mix = *mix;
  auto r = RunLoadgen(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), core::StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("cannot reach"), std::string::npos);
}

}  // namespace
}  // namespace tessera::xema

// The serving core's load generator against the toy echo system (echo_test_util.h): arrivals,
// URLs, solo runs, the open loop, recorded traces, SLO attainment and a refused template.
#include "serve/loadgen.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "serve/echo_test_util.h"
#include "serve/http_url.h"

namespace tessera::serve {
namespace {

// Template t POSTs "t<t> seed <seed>" to `paths[t]`, weight t + 1.
class EchoSource : public RequestSource {
 public:
  explicit EchoSource(std::vector<std::string> paths) : paths_(std::move(paths)) {}
  size_t Count() const override { return paths_.size(); }
  std::string Label(size_t t) const override { return fmt::format("echo {}", t); }
  double Weight(size_t t) const override { return static_cast<double>(t + 1); }
  LoadRequest Request(size_t t, uint64_t seed) const override {
    return {paths_[t], fmt::format("t{} seed {}", t, seed), "text/plain"};
  }

 private:
  std::vector<std::string> paths_;
};

TEST(ArrivalsTest, RateAndBurstinessAsAsked) {
  auto p = ArrivalTimes(ArrivalKind::kPoisson, 100, 1, 100, 7);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(static_cast<double>(p->size()), 10000, 400);
  EXPECT_EQ(*p, *ArrivalTimes(ArrivalKind::kPoisson, 100, 1, 100, 7));  // seeded
  for (double cv : {0.5, 2.0}) {
    auto g = ArrivalTimes(ArrivalKind::kGamma, 100, cv, 200, 3);
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
  EXPECT_FALSE(ArrivalTimes(ArrivalKind::kPoisson, 0, 1, 1, 1).ok());
  EXPECT_FALSE(ArrivalTimes(ArrivalKind::kGamma, 1, 0, 1, 1).ok());
  EXPECT_FALSE(ArrivalTimes(ArrivalKind::kPoisson, 1e6, 1, 1e6, 1).ok());
  EXPECT_FALSE(ParseArrivalKind("uniform").ok());
}

TEST(ArrivalsTest, RecordedTraceIsReadAndBadEntriesNamed) {
  auto t = ArrivalTraceFromJson(core::Json::parse(R"([{"at_s": 0, "template": 1},
      {"at_s": 0.25, "template": 0}, {"at_s": 0.25, "template": 1}])"),
                                "trace.json", 2);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[1].at_s, 0.25);
  EXPECT_EQ((*t)[2].template_index, 1);
  auto message = [](const char* text, int templates) {
    auto r = ArrivalTraceFromJson(core::Json::parse(text), "trace.json", templates);
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
LoadgenOptions LowRate(const std::string& url, uint64_t seed) {
  LoadgenOptions o;
  o.url = url;
  o.rate_rps = 4;
  o.duration_s = 1;
  o.seed = seed;
  o.slo_scale = 1000;
  return o;
}

TEST(LoadgenTest, LowRateAgainstTheEchoSystemCompletesAll) {
  auto server = StartEchoServer();
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const EchoSource source({kEchoPath});
  LoadgenOptions o = LowRate((*server)->url(), 3);
  int64_t last_done = -1;
  o.progress = [&](int64_t done, int64_t) { last_done = done; };
  auto r = RunLoadgen(o, source);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->planned, 0);
  EXPECT_EQ(r->sent, r->planned);
  EXPECT_EQ(r->completed, r->planned);
  EXPECT_EQ(r->status_counts[200], r->planned);
  EXPECT_EQ(r->slo_met, r->planned);
  EXPECT_EQ(r->slo_attainment, 1.0);
  EXPECT_EQ(last_done, r->planned);
  EXPECT_GT(r->templates[0].solo_latency_s, 0);
  EXPECT_EQ(r->templates[0].label, "echo 0");
  const core::Json j = ToJson(*r, o, "tessera.serve.loadgen/1");
  EXPECT_EQ(j["format"], "tessera.serve.loadgen/1");
  EXPECT_EQ(j["completed"], r->planned);
  EXPECT_EQ(j["arrivals"], "poisson");
  // The server saw the solo requests and every load request.
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
  auto tight = RunLoadgen(o, source);
  ASSERT_TRUE(tight.ok()) << tight.status().ToString();
  EXPECT_EQ(tight->slo_met, 0);
  o.reference_solo_s = {1.0, 2.0};
  EXPECT_NE(RunLoadgen(o, source).status().message().find("reference_solo_s: got 2 values for 1"),
            std::string::npos);
  (*server)->Stop();
}

TEST(LoadgenTest, PlannedArrivalsAreSeededAndFollowTheWeights) {
  const EchoSource source({kEchoPath, kEchoPath});
  LoadgenOptions o;
  o.rate_rps = 100;
  o.duration_s = 100;
  auto a = PlanArrivals(o, source);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = PlanArrivals(o, source);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(a->size(), b->size());
  int64_t second = 0;
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].seed, (*b)[i].seed);
    EXPECT_EQ((*a)[i].template_index, (*b)[i].template_index);
    second += (*a)[i].template_index;
  }
  // Weights 1 and 2: two thirds are the second template.
  EXPECT_NEAR(static_cast<double>(second) / static_cast<double>(a->size()), 2.0 / 3, 0.03);
  EXPECT_FALSE(PlanArrivals(o, EchoSource({})).ok());
}

TEST(LoadgenTest, RecordedTraceIsSentAsRecorded) {
  auto server = StartEchoServer();
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const EchoSource source({kEchoPath, kEchoPath});
  LoadgenOptions o = LowRate((*server)->url(), 3);
  o.trace = {{0.0, 1}, {0.1, 1}, {0.3, 0}};
  auto r = RunLoadgen(o, source);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->planned, 3);
  EXPECT_EQ(r->completed, 3);
  EXPECT_EQ(r->templates[0].sent, 1);
  EXPECT_EQ(r->templates[1].sent, 2);
  EXPECT_EQ(ToJson(*r, o, "x")["arrivals"], "trace");
  o.trace = {{0.0, 2}};
  EXPECT_NE(
      RunLoadgen(o, source).status().message().find("trace: template 2 is not in the mix of 2"),
      std::string::npos);
  (*server)->Stop();
}

TEST(LoadgenTest, TemplateRefusedAloneIsReportedAndNeverMeetsItsSlo) {
  auto server = StartEchoServer();
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const EchoSource source({kEchoPath, "/v1/nothing"});  // the second is answered 404
  auto r = RunLoadgen(LowRate((*server)->url(), 4), source);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->templates[0].solo_error.empty());
  EXPECT_NE(r->templates[1].solo_error.find("HTTP 404"), std::string::npos);
  EXPECT_EQ(r->templates[1].slo_met, 0);
  EXPECT_EQ(r->status_counts[404], r->templates[1].sent);
  EXPECT_EQ(r->slo_met, r->templates[0].sent);
  // No template served alone: FailedPrecondition naming the first.
  auto none = RunLoadgen(LowRate((*server)->url(), 4), EchoSource({"/v1/nothing"}));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("echo 0"), std::string::npos);
  (*server)->Stop();
}

TEST(LoadgenTest, UnreachableServerIsOneLine) {
  LoadgenOptions o;
  o.url = "http://127.0.0.1:1";
  o.duration_s = 1;
  auto r = RunLoadgen(o, EchoSource({kEchoPath}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), core::StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("cannot reach"), std::string::npos);
}

}  // namespace
}  // namespace tessera::serve

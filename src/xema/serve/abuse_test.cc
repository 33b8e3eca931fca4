#include "xema/serve/abuse.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/units.h"
#include "serve/raw_http.h"
#include "xema/serve/abuse_cases.h"
#include "xema/serve/server.h"

namespace tessera::xema {
namespace {

std::string BodyOf(const std::string& request) {
  const size_t end = request.find("\r\n\r\n");
  return end == std::string::npos ? "" : request.substr(end + 4);
}

TEST(AbuseCasesTest, TableIsCompleteAndThePlanIsSeeded) {
  const std::vector<AbuseKind>& kinds = AbuseKinds();
  ASSERT_EQ(kinds.size(), 40u);
  std::set<std::string> names;
  std::set<std::string> groups;
  for (const AbuseKind& k : kinds) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_GT(k.weight, 0) << k.name;
    groups.insert(AbuseGroupName(k.group));
  }
  EXPECT_EQ(groups.size(), 8u);
  AbusePlanContext ctx;
  ctx.budget_bytes = 256 << 20;
  auto a = PlanAbuse(500, 7, ctx);
  auto b = PlanAbuse(500, 7, ctx);
  auto c = PlanAbuse(500, 8, ctx);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  bool differ = false;
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].request, (*b)[i].request);
    differ = differ || (*a)[i].request != (*c)[i].request;
  }
  EXPECT_TRUE(differ);
  // The first cases are every kind once, in table order.
  for (size_t k = 0; k < kinds.size(); ++k) EXPECT_EQ((*a)[k].kind, static_cast<int>(k));
  EXPECT_FALSE(PlanAbuse(0, 1, ctx).ok());
}

TEST(AbuseCasesTest, OverBudgetIsSentOnlyWhenTheBudgetIsKnownAndTooSmall) {
  int over = -1;
  for (size_t k = 0; k < AbuseKinds().size(); ++k) {
    if (std::string(AbuseKinds()[k].name) == "over_budget") over = static_cast<int>(k);
  }
  ASSERT_GE(over, 0);
  AbusePlanContext ctx;
  EXPECT_FALSE(AbuseKindEnabled(over, ctx));  // budget unknown
  ctx.budget_bytes = core::kGiBInt64;
  EXPECT_TRUE(AbuseKindEnabled(over, ctx));
  ctx.budget_bytes = int64_t{1} << 50;
  EXPECT_FALSE(AbuseKindEnabled(over, ctx));
  auto plan = PlanAbuse(200, 1, ctx);
  ASSERT_TRUE(plan.ok());
  for (const AbuseCase& c : *plan) EXPECT_NE(c.kind, over);
}

// The body-level kinds must be refused by the server's own parser (so 400 is their contract),
// the valid ones accepted; body sizes respect the limit except where they must not.
TEST(AbuseCasesTest, BodiesMeetTheirContractOffline) {
  AbusePlanContext ctx;
  ctx.budget_bytes = core::kGiBInt64;
  auto plan = PlanAbuse(3000, 3, ctx);
  ASSERT_TRUE(plan.ok());
  for (const AbuseCase& c : *plan) {
    const AbuseKind& k = AbuseKinds()[static_cast<size_t>(c.kind)];
    const std::string body = BodyOf(c.request);
    const GenerationKind route = c.request.find("/v1/videos/") != std::string::npos
                                     ? GenerationKind::kVideo
                                     : GenerationKind::kImage;
    SCOPED_TRACE(std::string(k.name) + ": " + body.substr(0, 200));
    if (k.group == AbuseGroup::kValid) {
      EXPECT_TRUE(ParseGenerationRequest(c.body, c.route).ok());
      EXPECT_EQ(body, c.body);
    }
    const bool encoded = c.request.find("Content-Encoding") != std::string::npos;
    if (k.expected_status == 400 && !encoded &&
        (k.group == AbuseGroup::kMalformedJson || k.group == AbuseGroup::kWrongType ||
         k.group == AbuseGroup::kAbsurdValue)) {
      EXPECT_FALSE(ParseGenerationRequest(body, route).ok());
    }
    if (k.expected_status == 507) {
      EXPECT_TRUE(ParseGenerationRequest(body, route).ok());
    }
    if (std::string(k.name) == "body_too_large") {
      EXPECT_GT(static_cast<int64_t>(body.size()), ctx.max_body_bytes);
    } else if (k.group != AbuseGroup::kTooLarge) {
      EXPECT_LE(static_cast<int64_t>(body.size()), ctx.max_body_bytes);
    }
  }
}

TEST(RawHttpTest, ParsesAReplyAndRefusesGarbage) {
  auto r = serve::ParseHttpReply(
      "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}xx");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->headers.at("content-type"), "application/json");
  EXPECT_EQ(r->body, "{}");
  EXPECT_FALSE(serve::ParseHttpReply("garbage").ok());
  EXPECT_FALSE(serve::ParseHttpReply("HTTP/1.1 abc OK\r\n\r\n").ok());
  EXPECT_FALSE(serve::ParseHttpReply("HTTP/1.1 200 OK\r\nno colon\r\n\r\n").ok());
  EXPECT_FALSE(
      serve::RawHttpConnection::Open("127.0.0.1", 1, 2).ok());  // nothing listens on port 1
}

AbuseReport Passing() {
  AbuseReport r;
  AbuseKindReport k;
  k.name = "valid_image_16";
  k.expected_status = 200;
  k.sent = 10;
  k.got[200] = 10;
  r.kinds.push_back(k);
  r.sent = 10;
  r.valid_sent = r.valid_answered = 10;
  r.connections = r.connections_required = r.max_open_connections = 8;
  r.healthy_at_end = true;
  r.rss_sampled = true;
  r.rss_warm_bytes = 100 << 20;
  r.rss_end_bytes = (100 << 20) + (1 << 20);
  r.rss_bound_bytes = 16 << 20;
  return r;
}

TEST(AbuseJudgeTest, EachInjectedFaultFailsTheCheck) {
  AbuseReport r = Passing();
  JudgeAbuse(&r);
  EXPECT_TRUE(r.pass) << r.failures[0];
  EXPECT_TRUE(r.failures.empty());

  r = Passing();
  r.kinds[0].mismatches = 1;  // one reply with another status
  JudgeAbuse(&r);
  EXPECT_FALSE(r.pass);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_NE(r.failures[0].find("valid_image_16 x1"), std::string::npos);

  r = Passing();
  r.valid_answered = 9;  // a valid request left unanswered
  JudgeAbuse(&r);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.failures[0].find("1 of 10 valid requests"), std::string::npos);

  r = Passing();
  r.max_open_connections = 7;
  JudgeAbuse(&r);
  EXPECT_FALSE(r.pass);

  r = Passing();
  r.healthy_at_end = false;
  r.health_detail = "connect: Connection refused";
  JudgeAbuse(&r);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.failures[0].find("Connection refused"), std::string::npos);

  r = Passing();
  r.rss_end_bytes = r.rss_warm_bytes + r.rss_bound_bytes + 1;  // a leak
  JudgeAbuse(&r);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.failures[0].find("RSS grew"), std::string::npos);

  r = Passing();
  r.rss_end_bytes = 0;  // the process went away
  JudgeAbuse(&r);
  EXPECT_FALSE(r.pass);

  r = Passing();
  r.rss_sampled = false;  // not measured: not judged
  r.rss_end_bytes = int64_t{1} << 40;
  JudgeAbuse(&r);
  EXPECT_TRUE(r.pass);

  r = Passing();
  r.sent = 0;
  JudgeAbuse(&r);
  EXPECT_FALSE(r.pass);
}

TEST(AbuseTest, BadOptionsAreRefused) {
  AbuseOptions o;
  o.url = "http://127.0.0.1:1";
  o.connections = 0;
  EXPECT_EQ(RunAbuse(o).status().code(), core::StatusCode::kInvalidArgument);
  o.connections = 10;
  o.requests = 0;
  EXPECT_EQ(RunAbuse(o).status().code(), core::StatusCode::kInvalidArgument);
  o.requests = 10;
  o.url = "127.0.0.1:1";
  EXPECT_EQ(RunAbuse(o).status().code(), core::StatusCode::kInvalidArgument);
  o.url = "http://127.0.0.1:1";
  EXPECT_EQ(RunAbuse(o).status().code(), core::StatusCode::kUnavailable);
}

// An in-process server under the CLI's defaults (64 http threads, queue 64), one device (the
// warm-up then loads every model it will hold), hammered by 300 cases over 100 connections.
TEST(AbuseTest, InProcessServerSurvivesAndAnswersEveryValidRequest) {
  ServerOptions so;
  so.budget_bytes = core::kGiBInt64 / 4;
  so.devices = 1;
  so.queue_capacity = 64;
  auto server = DiffusionServer::Start(so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  AbuseOptions o;
  o.url = (*server)->url();
  o.requests = 300;
  o.connections = 100;
  o.seed = 5;
  o.server_pid = 0;
  auto r = RunAbuse(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string why;
  for (const std::string& f : r->failures) why += f + "\n";
  for (const AbuseKindReport& k : r->kinds) {
    for (const std::string& e : k.examples) why += k.name + ": " + e + "\n";
  }
  EXPECT_TRUE(r->pass) << why;
  EXPECT_EQ(r->sent, 300);
  EXPECT_EQ(r->mismatches, 0) << why;
  EXPECT_GT(r->valid_sent, 20);
  EXPECT_EQ(r->valid_answered, r->valid_sent);
  EXPECT_EQ(r->max_open_connections, 100);
  EXPECT_TRUE(r->healthy_at_end);
  EXPECT_TRUE(r->kinds_left_out.empty());
  ASSERT_GE(r->rss.size(), 3u);
  EXPECT_EQ(r->rss.front().phase, "warm");
  EXPECT_EQ(r->rss.back().phase, "end");
  const core::Json j = ToJson(*r, o);
  EXPECT_EQ(j["format"], "tessera.xema.abuse/1");
  EXPECT_EQ(j["kinds"].size(), AbuseKinds().size());
  EXPECT_FALSE(j.dump().empty());  // valid UTF-8 whatever was sent
  (*server)->Stop();
}

}  // namespace
}  // namespace tessera::xema

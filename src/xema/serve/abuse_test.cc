// Xema's abuse suite (the diffusion table, its plan and bodies) and a run against a
// DiffusionServer. The engine's own tests are in serve/abuse_test.cc.
#include "xema/serve/abuse.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/units.h"
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

// The plan's bytes are fixed by the seed and context: this fingerprint changes only when a
// case's bytes do (a change to the table or a builder must update it on purpose).
TEST(AbuseCasesTest, PlanBytesAreStable) {
  AbusePlanContext ctx;
  ctx.budget_bytes = core::kGiBInt64;
  auto plan = PlanAbuse(3000, 11, ctx);
  ASSERT_TRUE(plan.ok());
  uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
  auto mix = [&h](const std::string& s) {
    for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ULL;
    h = (h ^ 0xffu) * 1099511628211ULL;
  };
  for (const AbuseCase& c : *plan) {
    mix(std::to_string(c.kind));
    mix(c.request);
    mix(c.body);
    mix(c.path);
  }
  EXPECT_EQ(h, 17248135691600952498ULL);
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
      EXPECT_TRUE(ParseGenerationRequest(c.body, route).ok());
      EXPECT_EQ(c.path, GenerationRoute(route));
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

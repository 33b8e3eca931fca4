// The serving core's abuse tool: the raw HTTP reply parser, the judgement of a report, option
// checks, the plan of a suite, the HTTP-level requests, and a run of a toy echo suite against the
// toy echo system (echo_test_util.h) over 127.0.0.1.
#include "serve/abuse.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "serve/abuse_requests.h"
#include "serve/echo_test_util.h"
#include "serve/raw_http.h"

namespace tessera::serve {
namespace {

// A few kinds of the echo system's contract: a valid echo, an unknown route, a body over the
// limit, an unknown encoding, a bad request line, and two disconnects.
class EchoSuite : public AbuseSuite {
 public:
  const std::vector<AbuseKind>& Kinds() const override {
    static const std::vector<AbuseKind> kinds = {
        {"valid_echo", AbuseGroup::kValid, 200, 6, "a short body, seeds 1..3"},
        {"unknown_route", AbuseGroup::kRoute, 404, 2, "/v1/nothing"},
        {"body_too_large", AbuseGroup::kTooLarge, 413, 2, "the body limit + 1"},
        {"unknown_encoding", AbuseGroup::kMethod, 415, 1, "Content-Encoding zstd"},
        {"bad_request_line", AbuseGroup::kMethod, 400, 1, "garbage"},
        {"connect_close", AbuseGroup::kDisconnect, 0, 1, "connect, then close"},
        {"half_body_close", AbuseGroup::kDisconnect, 0, 1, "half the body, close"},
        {"never_sent", AbuseGroup::kRoute, 404, 5, "disabled"}};
    return kinds;
  }
  bool KindEnabled(int kind, const AbusePlanContext&) const override { return kind != 7; }
  void MakeCase(int kind, core::Rng& rng, const AbusePlanContext& ctx,
                AbuseCase* c) const override {
    const std::string body = fmt::format("seed {}", 1 + rng.Below(3));
    switch (kind) {
      case 0:
        c->body = body;
        c->path = kEchoPath;
        c->request = Post(ctx, kEchoPath, body);
        return;
      case 1:
        c->request = Post(ctx, "/v1/nothing", body);
        return;
      case 2:
        c->request = Post(ctx, kEchoPath, std::string(ctx.max_body_bytes + 1, 'x'));
        return;
      case 3:
        c->request = Post(ctx, kEchoPath, body, "Content-Encoding: zstd\r\n");
        return;
      case 4:
        c->request = "garbage\r\n\r\n";
        return;
      case 5:
        c->request = "";
        return;
      default: {
        const std::string whole = Post(ctx, kEchoPath, body);
        c->request = whole.substr(0, whole.size() - body.size() / 2);
      }
    }
  }
  std::string CheckValid(const AbuseCase& c, const HttpReply& reply,
                         std::string* fingerprint) const override {
    auto j = core::ParseJson(reply.body, "reply");
    if (!j.ok() || !j->is_object() || !j->contains("echo")) return "no echo";
    if ((*j)["echo"] != "<" + c.body + ">") return "a wrong echo";
    *fingerprint = (*j)["echo"].dump();
    return "";
  }

 private:
  static std::string Post(const AbusePlanContext& ctx, const std::string& path,
                          const std::string& body, const std::string& extra = "") {
    return fmt::format(
        "POST {} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\n{}Content-Length: "
        "{}\r\n\r\n{}",
        path, ctx.host, ctx.port, extra, body.size(), body);
  }
};

TEST(RawHttpTest, ParsesAReplyAndRefusesGarbage) {
  auto r = ParseHttpReply(
      "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}xx");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->headers.at("content-type"), "application/json");
  EXPECT_EQ(r->body, "{}");
  EXPECT_FALSE(ParseHttpReply("garbage").ok());
  EXPECT_FALSE(ParseHttpReply("HTTP/1.1 abc OK\r\n\r\n").ok());
  EXPECT_FALSE(ParseHttpReply("HTTP/1.1 200 OK\r\nno colon\r\n\r\n").ok());
  EXPECT_FALSE(RawHttpConnection::Open("127.0.0.1", 1, 2).ok());  // nothing listens on port 1
}

TEST(AbuseSuiteTest, PlanIsSeededAndStartsWithEveryEnabledKind) {
  const EchoSuite suite;
  AbusePlanContext ctx;
  auto a = PlanAbuse(suite, 200, 7, ctx);
  ASSERT_TRUE(a.ok());
  auto b = PlanAbuse(suite, 200, 7, ctx);
  auto c = PlanAbuse(suite, 200, 8, ctx);
  ASSERT_TRUE(b.ok() && c.ok());
  bool differ = false;
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].request, (*b)[i].request);
    EXPECT_NE((*a)[i].kind, 7);  // disabled
    differ = differ || (*a)[i].request != (*c)[i].request;
  }
  EXPECT_TRUE(differ);
  for (int k = 0; k < 7; ++k) EXPECT_EQ((*a)[static_cast<size_t>(k)].kind, k);
  EXPECT_EQ((*a)[5].action, AbuseAction::kCloseAfterSend);
  EXPECT_EQ((*a)[0].action, AbuseAction::kExchange);
  EXPECT_FALSE(PlanAbuse(suite, 0, 1, ctx).ok());
  ctx.max_body_bytes = 100;
  EXPECT_FALSE(PlanAbuse(suite, 10, 1, ctx).ok());
  EXPECT_STREQ(AbuseGroupName(AbuseGroup::kMalformedJson), "malformed_json");
}

TEST(AbuseRequestsTest, ShapesAsDocumented) {
  AbusePlanContext ctx;
  ctx.host = "h";
  ctx.port = 9;
  ctx.max_body_bytes = 1024;
  const AbuseRequestBuilder b{ctx};
  EXPECT_EQ(b.Get("/x"), "GET /x HTTP/1.1\r\nHost: h:9\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(RepeatText("ab", 3), "ababab");
  core::Rng rng(1);
  const std::string valid = R"({"a": 1})";
  EXPECT_LT(TruncatedBody(rng, valid).size(), valid.size());
  EXPECT_GE(DeepNestingBody(rng, 64 * 1024).size(), 300u);
  EXPECT_GT(ChunkedOverLimit(b, "/p").size(), 1024u);
  EXPECT_GT(UriTooLong(b, rng).size(), 8200u);
  const std::string half = HalfBody(b, "/p", valid);
  EXPECT_EQ(half.size(), b.Request("POST", "/p", valid).size() - valid.size() / 2);
  EXPECT_EQ(HeadersOnly(b, "/p", valid).substr(HeadersOnly(b, "/p", valid).size() - 4), "\r\n\r\n");
  EXPECT_NE(Encoded(b, "/p", "zstd", valid).find("Content-Encoding: zstd"), std::string::npos);
  EXPECT_GT(GzipBomb().size(), 1000u);
  EXPECT_LT(GzipBomb().size(), size_t{1} << 20);
  EXPECT_EQ(BadRequestLine(rng).find("HTTP/1.1 200"), std::string::npos);
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
  const EchoSuite suite;
  AbuseOptions o;
  o.url = "http://127.0.0.1:1";
  o.connections = 0;
  EXPECT_EQ(RunAbuse(o, suite).status().code(), core::StatusCode::kInvalidArgument);
  o.connections = 10;
  o.requests = 0;
  EXPECT_EQ(RunAbuse(o, suite).status().code(), core::StatusCode::kInvalidArgument);
  o.requests = 10;
  o.url = "127.0.0.1:1";
  EXPECT_EQ(RunAbuse(o, suite).status().code(), core::StatusCode::kInvalidArgument);
  o.url = "http://127.0.0.1:1";
  EXPECT_EQ(RunAbuse(o, suite).status().code(), core::StatusCode::kUnavailable);
}

TEST(AbuseTest, EchoSystemSurvivesTheEchoSuite) {
  auto server = StartEchoServer(1024, 2);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const EchoSuite suite;
  AbuseOptions o;
  o.url = (*server)->url();
  o.requests = 120;
  o.connections = 8;
  o.seed = 5;
  o.server_pid = 0;
  o.max_body_bytes = 1024;
  int64_t last_done = 0;
  o.progress = [&](int64_t done, int64_t) { last_done = done; };
  auto r = RunAbuse(o, suite);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string why;
  for (const std::string& f : r->failures) why += f + "\n";
  for (const AbuseKindReport& k : r->kinds) {
    for (const std::string& e : k.examples) why += k.name + ": " + e + "\n";
  }
  EXPECT_TRUE(r->pass) << why;
  EXPECT_EQ(r->sent, 120);
  EXPECT_EQ(last_done, 120);
  EXPECT_EQ(r->mismatches, 0) << why;
  EXPECT_GT(r->valid_sent, 10);
  EXPECT_EQ(r->valid_answered, r->valid_sent);
  EXPECT_EQ(r->max_open_connections, 8);
  EXPECT_TRUE(r->healthy_at_end);
  EXPECT_EQ(r->kinds_left_out, std::vector<std::string>{"never_sent"});
  ASSERT_GE(r->rss.size(), 3u);
  EXPECT_EQ(r->rss.front().phase, "warm");
  EXPECT_EQ(r->rss.back().phase, "end");
  const core::Json j = ToJson(*r, o, "tessera.serve.abuse/1");
  EXPECT_EQ(j["format"], "tessera.serve.abuse/1");
  EXPECT_EQ(j["kinds"].size(), 7u);
  (*server)->Stop();
}

}  // namespace
}  // namespace tessera::serve

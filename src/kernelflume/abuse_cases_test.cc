// The completion abuse suite: its table and seeded plan (every kind touched, each bad body
// refused by ParseCompletionRequest, each valid one accepted), and a run of the serving core's
// abuse tool against an in-process CompletionServer (fake transport, 2 attention nodes).
#include "kernelflume/abuse_cases.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kernelflume/completion_request.h"
#include "kernelflume/completion_server.h"
#include "models/llama_test_util.h"
#include "serve/abuse.h"

namespace tessera::kernelflume {
namespace {

using serve::AbuseCase;
using serve::AbuseGroup;
using serve::AbuseKind;

models::LlamaConfig AbuseServerConfig() {
  models::LlamaConfig c = models::testing::SmallLlamaConfig(2, "abuse-server");
  c.max_context = 256;
  return c;
}

std::string AbuseBodyOf(const std::string& request) {
  const size_t end = request.find("\r\n\r\n");
  return end == std::string::npos ? "" : request.substr(end + 4);
}

TEST(CompletionAbuseSuiteTest, PlanIsSeededTouchesEveryKindAndBodiesMatchTheirStatus) {
  const serve::AbuseSuite& suite = CompletionAbuseSuite();
  const std::vector<AbuseKind>& kinds = suite.Kinds();
  std::set<std::string> names, groups;
  for (const AbuseKind& k : kinds) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_GT(k.weight, 0) << k.name;
    groups.insert(serve::AbuseGroupName(k.group));
  }
  EXPECT_EQ(groups.size(), 8u);
  serve::AbusePlanContext ctx;
  auto a = serve::PlanAbuse(suite, 600, 7, ctx);
  auto b = serve::PlanAbuse(suite, 600, 7, ctx);
  auto c = serve::PlanAbuse(suite, 600, 8, ctx);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  bool differ = false;
  std::set<int> touched;
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].request, (*b)[i].request);
    differ = differ || (*a)[i].request != (*c)[i].request;
    touched.insert((*a)[i].kind);
  }
  EXPECT_TRUE(differ);
  EXPECT_EQ(touched.size(), kinds.size());
  for (size_t k = 0; k < kinds.size(); ++k) EXPECT_EQ((*a)[k].kind, static_cast<int>(k));
  // Each body-level case against the parser (the context check is the engine's: a prompt
  // over the context may parse).
  const models::LlamaConfig config = AbuseServerConfig();
  for (const AbuseCase& x : *a) {
    const AbuseKind& k = kinds[static_cast<size_t>(x.kind)];
    const std::string body = AbuseBodyOf(x.request);
    SCOPED_TRACE(std::string(k.name) + ": " + body.substr(0, 200));
    if (k.group == AbuseGroup::kValid) {
      auto r = ParseCompletionRequest(x.body, config);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(x.path, "/v1/completions");
      EXPECT_EQ(body, x.body);
      EXPECT_GE(r->params.max_tokens, 1);
      EXPECT_LE(r->params.max_tokens, 8);
    }
    const bool encoded = x.request.find("Content-Encoding") != std::string::npos;
    const bool body_level = k.group == AbuseGroup::kMalformedJson ||
                            k.group == AbuseGroup::kWrongType ||
                            k.group == AbuseGroup::kAbsurdValue;
    if (k.expected_status == 400 && !encoded && body_level &&
        std::string(k.name) != "prompt_over_context") {
      EXPECT_FALSE(ParseCompletionRequest(body, config).ok());
    }
    if (std::string(k.name) == "body_too_large") {
      EXPECT_GT(static_cast<int64_t>(body.size()), ctx.max_body_bytes);
    } else if (k.group != AbuseGroup::kTooLarge) {
      EXPECT_LE(static_cast<int64_t>(body.size()), ctx.max_body_bytes);
    }
  }
}

// The check of a valid reply accepts a right one and refuses each kind of wrong one.
TEST(CompletionAbuseSuiteTest, CheckValidRefusesWrongReplies) {
  const serve::AbuseSuite& suite = CompletionAbuseSuite();
  AbuseCase plain;
  plain.body = R"({"prompt": "abc", "max_tokens": 2, "stop_at_eos": false})";
  auto reply = [](const std::string& body) {
    serve::HttpReply r;
    r.status = 200;
    r.body = body;
    return r;
  };
  const std::string good =
      R"({"choices": [{"index": 0, "text": "xy", "token_ids": [120, 121], "finish_reason":)"
      R"( "length"}], "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}})";
  std::string fp;
  EXPECT_EQ(suite.CheckValid(plain, reply(good), &fp), "");
  EXPECT_EQ(fp, "[120,121]");
  for (const std::string& bad : std::vector<std::string>{
           "not json", R"({"choices": []})",
           R"({"choices": [{"token_ids": [1], "finish_reason": "length"}], "usage": )"
           R"({"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5}})",
           R"({"choices": [{"token_ids": [1, 2], "finish_reason": "stop"}], "usage": )"
           R"({"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}})",
           R"({"choices": [{"token_ids": [1, 2], "finish_reason": "length"}], "usage": )"
           R"({"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 7}})",
           R"({"choices": [{"token_ids": [1, "2"], "finish_reason": "length"}]})"}) {
    EXPECT_NE(suite.CheckValid(plain, reply(bad), &fp), "") << bad;
  }
  AbuseCase stream = plain;
  stream.body = R"({"prompt": "abc", "max_tokens": 2, "stop_at_eos": false, "stream": true})";
  const std::string events =
      "data: {\"choices\": [{\"token_id\": 7, \"finish_reason\": null}]}\n\n"
      "data: {\"choices\": [{\"token_id\": 8, \"finish_reason\": null}]}\n\n"
      "data: {\"choices\": [{\"text\": \"\", \"finish_reason\": \"length\"}], \"usage\": "
      "{\"prompt_tokens\": 4, \"completion_tokens\": 2, \"total_tokens\": 6}}\n\n";
  EXPECT_EQ(suite.CheckValid(stream, reply(events + "data: [DONE]\n\n"), &fp), "");
  EXPECT_EQ(fp, "[7,8]");
  EXPECT_NE(suite.CheckValid(stream, reply(events), &fp), "");  // no [DONE]
  EXPECT_NE(suite.CheckValid(stream, reply("data: {\"error\": {}}\n\ndata: [DONE]\n\n"), &fp), "");
}

// An in-process server (2 attention nodes over the fake transport, the CLI's HTTP defaults
// but short body and head deadlines) hammered by 120 cases over 20 connections: every case
// gets its status, every valid request is answered with the same ids for the same body.
TEST(CompletionAbuseSuiteTest, InProcessServerSurvivesAndAnswersEveryValidRequest) {
  auto model = models::LlamaModel::FromSeed(AbuseServerConfig(), 45, 0.1f);
  ASSERT_TRUE(model.ok());
  CompletionServerOptions so;
  so.cluster.num_nodes = 2;
  so.cluster.page_tokens = 8;
  so.cluster.capacity_tokens = 4096;
  so.autoscale = false;
  so.autoscaler.max_nodes = 3;
  so.http.header_deadline_s = 5;
  so.http.body_deadline_s = 3;
  auto server = CompletionServer::Start(*model, so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  serve::AbuseOptions o;
  o.url = (*server)->url();
  o.requests = 120;
  o.connections = 20;
  o.seed = 3;
  o.server_pid = -1;  // correctness only: the RSS of this process includes the client
  auto r = serve::RunAbuse(o, CompletionAbuseSuite());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string why;
  for (const std::string& f : r->failures) why += f + "\n";
  for (const serve::AbuseKindReport& k : r->kinds) {
    for (const std::string& e : k.examples) why += k.name + ": " + e + "\n";
  }
  EXPECT_TRUE(r->pass) << why;
  EXPECT_EQ(r->sent, 120);
  EXPECT_EQ(r->mismatches, 0) << why;
  EXPECT_GT(r->valid_sent, 5);
  EXPECT_EQ(r->valid_answered, r->valid_sent);
  EXPECT_EQ(r->max_open_connections, 20);
  EXPECT_TRUE(r->healthy_at_end);
  EXPECT_EQ(r->kinds.size(), CompletionAbuseSuite().Kinds().size());
  const core::Json j = serve::ToJson(*r, o, "tessera.kernelflume.abuse/1");
  EXPECT_EQ(j["format"], "tessera.kernelflume.abuse/1");
  EXPECT_FALSE(j.dump().empty());
  (*server)->Stop();
}

}  // namespace
}  // namespace tessera::kernelflume

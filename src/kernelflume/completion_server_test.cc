// The completion server over real HTTP on 127.0.0.1 (in-process attention nodes): replies and
// streams equal to the monolithic model's greedy tokens, each refusal's status and named field
// (429 and 503 with Retry-After), the admin routes' refusals, and a client that disconnects
// mid-stream cancelling its request so that no node keeps a range.
#include "kernelflume/completion_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "kernelflume/generate_service.h"
#include "kernelflume/kernelflume_test_util.h"
#include "models/byte_tokenizer.h"
#include "models/kv_cache.h"
#include "models/llama_test_util.h"
#include "models/sampler.h"
#include "serve/raw_http.h"

namespace tessera::kernelflume {
namespace {

using core::Json;

models::LlamaConfig ServerConfig() {
  models::LlamaConfig c = models::testing::SmallLlamaConfig(2, "test-server");
  c.max_context = 256;
  return c;
}

CompletionServerOptions TestOptions(int nodes) {
  CompletionServerOptions o;
  o.cluster.num_nodes = nodes;
  o.cluster.page_tokens = 8;
  o.cluster.capacity_tokens = 4096;
  o.cluster.weight_node.router.reroute_every = 8;
  o.autoscale = false;
  o.autoscaler.max_nodes = 3;
  return o;
}

serve::HttpReply Call(int port, const std::string& method, const std::string& path,
                      const std::string& body = "") {
  auto c = serve::RawHttpConnection::Open("127.0.0.1", port, 30);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return {};
  const std::string req = method + " " + path +
                          " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: "
                          "application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  EXPECT_TRUE(c->Send(req).ok());
  auto r = c->ReadReply();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : serve::HttpReply{};
}

TEST(CompletionServerTest, RepliesAndStreamsTheMonolithicGreedyTokens) {
  auto model = models::LlamaModel::FromSeed(ServerConfig(), 41, 0.1f);
  ASSERT_TRUE(model.ok());
  auto server = CompletionServer::Start(*model, TestOptions(2));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  const std::vector<int32_t> prompt = models::ByteTokenizer::Encode("Hello there");
  const std::vector<int32_t> want = testing::MonolithicGreedy(*model, prompt, 12);
  serve::HttpReply r = Call(port, "POST", "/v1/completions",
                            R"({"prompt": "Hello there", "max_tokens": 12, "stop_at_eos": false})");
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = Json::parse(r.body);
  EXPECT_EQ(j["choices"][0]["token_ids"].get<std::vector<int32_t>>(), want);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], static_cast<int64_t>(prompt.size()));
  // The same as a stream of server-sent events, one per token, then [DONE].
  r = Call(port, "POST", "/v1/completions",
           R"({"prompt": "Hello there", "max_tokens": 12, "stop_at_eos": false, "stream": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<int32_t> streamed;
  for (size_t at = r.body.find("data: {"); at != std::string::npos;
       at = r.body.find("data: {", at + 1)) {
    const size_t end = r.body.find("\n\n", at);
    const Json ev = Json::parse(r.body.substr(at + 6, end - at - 6));
    if (ev["choices"][0].contains("token_id")) streamed.push_back(ev["choices"][0]["token_id"]);
  }
  EXPECT_EQ(streamed, want);
  EXPECT_NE(r.body.find("data: [DONE]"), std::string::npos);
  r = Call(port, "GET", "/v1/models");
  EXPECT_EQ(Json::parse(r.body)["data"][0]["id"], "test-server");
  r = Call(port, "GET", "/v1/metrics");
  const Json m = Json::parse(r.body);
  EXPECT_EQ(m["requests"]["completed"], 2);
  EXPECT_EQ(m["attention_nodes"], 2);
  EXPECT_TRUE(m.contains("tpot_ms") && m.contains("routing_version") && m.contains("kv_use"));
}

TEST(CompletionServerTest, RefusalsCarryTheirStatusAndNameTheField) {
  auto model = models::LlamaModel::FromSeed(ServerConfig(), 42, 0.1f);
  ASSERT_TRUE(model.ok());
  CompletionServerOptions o = TestOptions(1);
  o.http.max_body_bytes = 4096;
  auto server = CompletionServer::Start(*model, o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  struct Case {
    std::string body;
    int status;
    std::string names;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"prompt": "x", "max_tokens": 0})", 400, "max_tokens"},
           {R"({"prompt": "xyz", "max_tokens": 253})", 400, "context of 256"},
           {R"({"prompt": "x", "maxtokens": 3})", 400, "unknown key 'maxtokens'"},
           {R"({"prompt": [1, 999]})", 400, "prompt[1]"},
           {std::string(R"({"prompt": ")") + std::string(5000, 'a') + "\"}", 413, ""},
       }) {
    const serve::HttpReply r = Call(port, "POST", "/v1/completions", c.body);
    EXPECT_EQ(r.status, c.status) << c.body.substr(0, 60) << " -> " << r.body;
    EXPECT_NE(r.body.find(c.names), std::string::npos) << r.body;
  }
  // Admin: a node of another model, and draining the last node, are refused with the reason.
  serve::HttpReply r = Call(port, "POST", "/admin/nodes", R"({"fingerprint": "other"})");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("another model"), std::string::npos) << r.body;
  r = Call(port, "POST", "/admin/drain", R"({"node": 0})");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("last active node"), std::string::npos) << r.body;
  r = Call(port, "POST", "/admin/drain", R"({"node": 7})");
  EXPECT_EQ(r.status, 404) << r.body;
  // Every attention node gone: 503 with Retry-After, on a completion and on /healthz.
  (*server)->cluster().KillNode(0);
  for (int i = 0; i < 500 && !(*server)->cluster().weight_node().active_nodes().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r = Call(port, "POST", "/v1/completions", R"({"prompt": "x"})");
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_NE(r.body.find("no active attention node"), std::string::npos) << r.body;
  EXPECT_EQ(Call(port, "GET", "/healthz").status, 503);
}

TEST(CompletionServerTest, QueueFullIs429WithRetryAfter) {
  auto model = models::LlamaModel::FromSeed(ServerConfig(), 43, 0.1f);
  ASSERT_TRUE(model.ok());
  CompletionServerOptions o = TestOptions(1);
  o.cluster.capacity_tokens = 64;
  o.autoscaler.max_nodes = 1;
  auto server = CompletionServer::Start(*model, o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  // 80 tokens can never fit one 64-token node at the maximum of 1 node.
  const serve::HttpReply r =
      Call((*server)->port(), "POST", "/v1/completions",
           R"({"prompt": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "max_tokens": 70})");
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(r.headers.count("retry-after"), 1u);
  EXPECT_NE(r.body.find("maximum of 1 attention nodes"), std::string::npos) << r.body;
}

TEST(CompletionServerTest, AClientThatLeavesMidStreamFreesItsRanges) {
  auto model = models::LlamaModel::FromSeed(ServerConfig(), 44, 0.1f);
  ASSERT_TRUE(model.ok());
  auto server = CompletionServer::Start(*model, TestOptions(2));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto c = serve::RawHttpConnection::Open("127.0.0.1", (*server)->port(), 30);
  ASSERT_TRUE(c.ok());
  const std::string body = R"({"prompt": "abc", "max_tokens": 240, "stop_at_eos": false,
                               "stream": true})";
  ASSERT_TRUE(c->Send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                      "application/json\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body)
                  .ok());
  CompletionEngine& engine = (*server)->engine();
  for (int i = 0; i < 3000 && engine.Metrics().tokens < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  c->Close();
  for (int i = 0; i < 3000 && engine.Metrics().cancelled == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(engine.Metrics().cancelled, 1);
  EXPECT_LT(engine.Metrics().tokens, 240);
  auto held = [&] {
    int64_t n = 0;
    for (const AttentionNodeStats& s : (*server)->cluster().node_stats()) n += s.ranges;
    return n;
  };
  for (int i = 0; i < 3000 && held() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(held(), 0);
  EXPECT_EQ((*server)->cluster().weight_node().routes()->num_requests(), 0u);
}

}  // namespace
}  // namespace tessera::kernelflume

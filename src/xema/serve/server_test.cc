#include "xema/serve/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/units.h"
#include "runtime/device_allocator.h"
#include "serve/base64.h"
#include "serve/png.h"
#include "xema/serve/server_test_util.h"

namespace tessera::xema {
namespace {

using namespace serve_test;  // NOLINT(google-build-using-namespace): shared test helpers

const std::string kImage =
    R"({"model": "tiny-t2i", "prompt": "a red cube", "size": "32x16", "num_inference_steps": 2,
        "seed": 5})";

TEST(ServerTest, ImageEqualsDirectRunAndMetricsCount) {
  auto s = StartServer(Options());
  ASSERT_NE(s, nullptr);
  const Reply r = PostImage(*s, kImage);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_TRUE(SameFrames(Frames(r), DirectRun(kImage, GenerationKind::kImage)));
  EXPECT_EQ(r.body["policy"], "none");
  EXPECT_EQ(r.body["template_hit"], false);
  EXPECT_GT(r.body["peak_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(PostImage(*s, "{\"model\": ").status, 400);
  const Reply unknown = PostImage(*s, R"({"model": "tiny-t2i", "prompt": "p", "n": 1})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body["error"]["message"].get<std::string>().find("unknown key 'n'"),
            std::string::npos);
  const Reply none = PostImage(
      *s, R"({"model": "tiny-t2i", "prompt": "p", "size": "16x16", "num_inference_steps": 1,
              "response_format": "none"})");
  EXPECT_EQ(none.status, 200);
  EXPECT_TRUE(none.body["data"].empty());
  httplib::Client c("127.0.0.1", s->port());
  auto m = c.Get("/v1/metrics");
  ASSERT_TRUE(m);
  auto j = core::ParseJson(m->body, "metrics");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["status"]["200"], 2);
  EXPECT_EQ((*j)["status"]["400"], 2);
  EXPECT_EQ((*j)["requests"], 4);
  EXPECT_EQ((*j)["devices"].size(), 1u);
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  EXPECT_EQ(c.Get("/nowhere")->status, 404);
  s->Stop();
}

TEST(ServerTest, VideoRepliesOnePngPerFrame) {
  auto s = StartServer(Options());
  ASSERT_NE(s, nullptr);
  const std::string body =
      R"({"model": "tiny-t2v", "prompt": "waves", "size": "16x16", "frames": 5,
          "num_inference_steps": 1, "guidance_scale": 1})";
  const Reply r = Post(*s, "/v1/videos/generations", body);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["data"].size(), 5u);
  EXPECT_TRUE(SameFrames(Frames(r), DirectRun(body, GenerationKind::kVideo)));
}

TEST(ServerTest, ConcurrentRequestsOnTwoDevicesGiveTheDirectRunsImage) {
  ServerOptions o = Options();
  o.devices = 2;
  auto s = StartServer(o);
  ASSERT_NE(s, nullptr);
  std::vector<std::future<Reply>> replies;
  for (int i = 0; i < 4; ++i) {
    replies.push_back(std::async(std::launch::async, [&] { return PostImage(*s, kImage); }));
  }
  const std::vector<serve::Rgb8Image> direct = DirectRun(kImage, GenerationKind::kImage);
  for (auto& f : replies) {
    const Reply r = f.get();
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_TRUE(SameFrames(Frames(r), direct));
  }
  EXPECT_EQ(s->Metrics()["devices"].size(), 2u);
}

TEST(ServerTest, TooLargeForTheBudgetIs507AndLeaksNothing) {
  runtime::HeapDeviceAllocator heap;
  auto p = DiffusionPipeline::Load(*TinyModel("tiny-t2i"), heap);
  ASSERT_TRUE(p.ok());
  const int64_t weights = heap.live_bytes();
  DiffusionRequest big;
  big.width = big.height = 128;
  big.steps = 1;
  // Passes the MinimumPeakBytes check, runs out of memory in the VAE.
  const int64_t budget = MinimumPeakBytes(*TinyModel("tiny-t2i"), big) + 1;
  auto s = StartServer(Options(MemoryPolicy::kNone, budget));
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(PostImage(*s, kImage).status, 200);
  const Reply r = PostImage(
      *s, R"({"model": "tiny-t2i", "prompt": "p", "size": "128x128", "num_inference_steps": 1})");
  EXPECT_EQ(r.status, 507) << r.body.dump();
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("out of device memory"),
            std::string::npos);
  EXPECT_EQ(s->Metrics()["devices"][0]["live_bytes"], weights);
  // Refused before queueing: needs more than the budget at any allocator.
  const Reply huge = PostImage(
      *s, R"({"model": "tiny-t2i", "prompt": "p", "size": "512x512", "num_inference_steps": 1})");
  EXPECT_EQ(huge.status, 507);
  EXPECT_EQ(PostImage(*s, kImage).status, 200);  // still serving
}

TEST(ServerTest, StaticTemplateThatCannotFitIs507Once) {
  DiffusionRequest big;
  big.width = big.height = 128;
  big.steps = 1;
  const int64_t budget = MinimumPeakBytes(*TinyModel("tiny-t2i"), big) + 1;
  auto s = StartServer(Options(MemoryPolicy::kStatic, budget));
  ASSERT_NE(s, nullptr);
  const std::string body =
      R"({"model": "tiny-t2i", "prompt": "p", "size": "128x128", "num_inference_steps": 1})";
  for (int i = 0; i < 2; ++i) {  // the second is refused from the cached plan
    const Reply r = PostImage(*s, body);
    EXPECT_EQ(r.status, 507) << r.body.dump();
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find("out of device memory"),
              std::string::npos);
  }
  EXPECT_EQ(s->Metrics()["templates_planned"], 1);
  EXPECT_EQ(s->Metrics()["devices"][0]["live_bytes"], 0);
  EXPECT_EQ(PostImage(*s, kImage).status, 200);
}

TEST(ServerTest, QueueFullIs429) {
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  ServerOptions o = Options();
  o.queue_capacity = 1;
  o.before_run = [go](int) { go.wait(); };
  auto s = StartServer(o);
  ASSERT_NE(s, nullptr);
  const std::string small =
      R"({"model": "tiny-t2i", "prompt": "p", "size": "16x16", "num_inference_steps": 1})";
  auto a = std::async(std::launch::async, [&] { return PostImage(*s, small).status; });
  ASSERT_TRUE(Eventually([&] { return s->Metrics()["in_flight"] == 1; }));
  auto b = std::async(std::launch::async, [&] { return PostImage(*s, small).status; });
  ASSERT_TRUE(Eventually([&] { return s->queue_length() == 1; }));
  const Reply c = PostImage(*s, small);
  EXPECT_EQ(c.status, 429);
  release.set_value();
  EXPECT_EQ(a.get(), 200);
  EXPECT_EQ(b.get(), 200);
  EXPECT_EQ(s->Metrics()["status"]["429"], 1);
}

TEST(ServerTest, DeadlinePassedInTheQueueIs503AndBodiesAreBounded) {
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  ServerOptions o = Options();
  o.before_run = [go](int) { go.wait(); };
  auto s = StartServer(o);
  ASSERT_NE(s, nullptr);
  const std::string small =
      R"({"model": "tiny-t2i", "prompt": "p", "size": "16x16", "num_inference_steps": 1)";
  auto a = std::async(std::launch::async, [&] { return PostImage(*s, small + "}").status; });
  ASSERT_TRUE(Eventually([&] { return s->Metrics()["in_flight"] == 1; }));
  auto b = std::async(std::launch::async,
                      [&] { return PostImage(*s, small + R"(, "deadline_s": 0.05})"); });
  ASSERT_TRUE(Eventually([&] { return s->queue_length() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  release.set_value();
  EXPECT_EQ(a.get(), 200);
  const Reply late = b.get();
  EXPECT_EQ(late.status, 503);
  EXPECT_NE(late.body["error"]["message"].get<std::string>().find("deadline_s"), std::string::npos);
  const Reply big = PostImage(
      *s, R"({"model": "tiny-t2i", "prompt": ")" + std::string(100 * 1024, 'a') + R"("})");
  EXPECT_EQ(big.status, 413);
}

TEST(ServerTest, StaticPolicyHitsTheTemplateBitwiseAsNone) {
  auto plain = StartServer(Options(MemoryPolicy::kNone));
  auto fixed = StartServer(Options(MemoryPolicy::kStatic));
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(fixed, nullptr);
  const std::string second =
      R"({"model": "tiny-t2i", "prompt": "another", "size": "32x16", "num_inference_steps": 2,
          "seed": 9})";
  const Reply first = PostImage(*fixed, kImage);
  ASSERT_EQ(first.status, 200) << first.body.dump();
  EXPECT_EQ(first.body["template_hit"], false);  // served by the recording run
  EXPECT_EQ(first.body["policy"], "static");
  const Reply ref = PostImage(*plain, second);
  ASSERT_EQ(ref.status, 200);
  // The first hit maps the arena and loads the weights into it; the second rearms it.
  for (int i = 0; i < 2; ++i) {
    const Reply hit = PostImage(*fixed, second);
    ASSERT_EQ(hit.status, 200) << hit.body.dump();
    EXPECT_EQ(hit.body["template_hit"], true);
    EXPECT_TRUE(SameFrames(Frames(hit), Frames(ref)));
  }
  EXPECT_EQ(fixed->Metrics()["templates_planned"], 1);
  EXPECT_EQ(fixed->Metrics()["template_hits"], 2);
}

TEST(ServerTest, WarmUpTemplatesArePlannedBeforeServing) {
  ServerOptions o = Options(MemoryPolicy::kStatic);
  auto parsed = ParseGenerationRequest(kImage, GenerationKind::kImage);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  DiffusionRequest warm = parsed->request;
  warm.prompt.clear();  // a template's plan ignores the prompt
  o.warm_up = {warm};
  auto s = StartServer(o);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->Metrics()["templates_planned"], 1);  // before any request
  const Reply r = PostImage(*s, kImage);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["template_hit"], true);  // no recording run at request time
  EXPECT_TRUE(SameFrames(Frames(r), DirectRun(kImage, GenerationKind::kImage)));
  // A bad warm-up template fails Start, naming it.
  o.warm_up[0].steps = 0;
  auto bad = DiffusionServer::Start(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("warm_up[0]"), std::string::npos) << bad.status().message();
}

TEST(ServerTest, StaticPolicySharesWeightsAndOneActivationRegion) {
  auto s = StartServer(Options(MemoryPolicy::kStatic));
  ASSERT_NE(s, nullptr);
  const std::string a =
      R"({"model": "tiny-t2i", "prompt": "p", "size": "16x16", "num_inference_steps": 1})";
  const std::string b =
      R"({"model": "tiny-t2i", "prompt": "p", "size": "32x16", "num_inference_steps": 1})";
  for (const std::string* body : {&a, &b, &a, &b, &a}) {
    ASSERT_EQ(PostImage(*s, *body).status, 200);
  }
  const core::Json m = s->Metrics();
  EXPECT_EQ(m["template_hits"], 3);
  // One copy of the weights, loaded once, and one activation region for both templates:
  // mapped at a's first hit, grown once for b's larger arena, then switched over for free.
  const core::Json& d = m["devices"][0];
  EXPECT_EQ(d["weight_loads"], 1);
  EXPECT_EQ(d["region_maps"], 2);
  EXPECT_GE(d["peak_reserved_bytes"].get<int64_t>(), d["peak_bytes"].get<int64_t>());
  EXPECT_GT(d["live_bytes"].get<int64_t>(), d["peak_bytes"].get<int64_t>() / 2);
}

// `n` zero bytes, gzip-compressed.
std::string GzipZeros(size_t n) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
  const std::string zeros(n, '\0');
  std::string out(n / 256, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
  z.avail_in = static_cast<uInt>(n);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Connects a raw socket to the server.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

TEST(ServerTest, ClientsThatDisconnectDoNotHurtTheServer) {
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::atomic<bool> hold{true};
  ServerOptions o = Options();
  o.before_run = [go, &hold](int) {
    if (hold) go.wait();
  };
  auto s = StartServer(o);
  ASSERT_NE(s, nullptr);
  const std::string body =
      R"({"model": "tiny-t2i", "prompt": "p", "size": "16x16", "num_inference_steps": 1})";
  // Half a request, then close.
  int fd = Connect(s->port());
  const std::string half = "POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n" + body.substr(0, 10);
  ASSERT_EQ(send(fd, half.data(), half.size(), 0), static_cast<ssize_t>(half.size()));
  close(fd);
  // A whole request, closed while the server holds it.
  fd = Connect(s->port());
  const std::string whole =
      "POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(send(fd, whole.data(), whole.size(), 0), static_cast<ssize_t>(whole.size()));
  ASSERT_TRUE(Eventually([&] { return s->Metrics()["in_flight"] == 1; }));
  close(fd);
  hold = false;
  release.set_value();
  ASSERT_TRUE(Eventually([&] { return s->Metrics()["requests"] == 1; }));
  EXPECT_EQ(PostImage(*s, body).status, 200);
  httplib::Client c("127.0.0.1", s->port());
  EXPECT_EQ(c.Get("/healthz")->status, 200);
}

// Sends raw bytes on a new connection and returns the reply's status line and body.
std::string RawExchange(int port, const std::string& bytes) {
  const int fd = Connect(port);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  EXPECT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) reply.append(buf, n);
  close(fd);
  return reply;
}

std::string PostRaw(const std::string& headers, const std::string& body) {
  return "POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + headers +
         "\r\n" + body;
}

// Regressions found by abuse.h: each of these ended the process, answered 500 or 200, or read
// an unbounded body before it was fixed.
TEST(ServerTest, AbusiveRequestsGetTheirStatusAndTheServerLives) {
  auto s = StartServer(Options());
  ASSERT_NE(s, nullptr);
  const int port = s->port();
  // A path that is not UTF-8 in the 404 message: std::terminate from the error handler.
  for (const char* path : {"/%FF", "/\xC3\x28", "/%C3"}) {
    const std::string r =
        RawExchange(port, std::string("GET ") + path + " HTTP/1.1\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 404", 0), 0u) << path << ": " << r;
    EXPECT_NE(r.find("no such route"), std::string::npos);
  }
  // A multibyte model name cut in the message: 500 (the reply failed to dump).
  std::string model = "x";
  for (int i = 0; i < 30; ++i) model += "\xC3\xA9";
  const Reply bad_model =
      PostImage(*s, R"({"model": ")" + model + R"(", "prompt": "p", "size": "16x16"})");
  EXPECT_EQ(bad_model.status, 400) << bad_model.body.dump();
  // A chunked body over the limit: read without a limit, then 400.
  std::string chunked;
  for (int i = 0; i < 20; ++i) chunked += "1000\r\n" + std::string(4096, 'p') + "\r\n";
  const std::string too_long =
      RawExchange(port, PostRaw("Transfer-Encoding: chunked\r\n", chunked + "0\r\n\r\n"));
  EXPECT_EQ(too_long.rfind("HTTP/1.1 413", 0), 0u) << too_long.substr(0, 200);
  // 16 KiB of gzip that decode to 16 MiB: decoded into memory, then 400.
  const std::string bomb = GzipZeros(16 << 20);
  ASSERT_LT(bomb.size(), 64u << 10);
  const std::string bombed = RawExchange(
      port,
      PostRaw("Content-Encoding: gzip\r\nContent-Length: " + std::to_string(bomb.size()) + "\r\n",
              bomb));
  EXPECT_EQ(bombed.rfind("HTTP/1.1 413", 0), 0u) << bombed.substr(0, 200);
  // A coding cpp-httplib does not know: parsed as plain JSON and answered 200.
  const std::string body =
      R"({"model": "tiny-t2i", "prompt": "p", "size": "16x16", "num_inference_steps": 1})";
  const std::string zstd = RawExchange(
      port,
      PostRaw("Content-Encoding: zstd\r\nContent-Length: " + std::to_string(body.size()) + "\r\n",
              body));
  EXPECT_EQ(zstd.rfind("HTTP/1.1 415", 0), 0u) << zstd.substr(0, 200);
  EXPECT_EQ(PostImage(*s, body).status, 200);
}

TEST(ServerTest, StopFinishesQueuedRequestsAndMaxRequestsStops) {
  ServerOptions o = Options();
  o.max_requests = 2;
  auto s = StartServer(o);
  ASSERT_NE(s, nullptr);
  const std::string body =
      R"({"model": "tiny-t2i", "prompt": "p", "size": "16x16", "num_inference_steps": 1})";
  auto a = std::async(std::launch::async, [&] { return PostImage(*s, body).status; });
  auto b = std::async(std::launch::async, [&] { return PostImage(*s, body).status; });
  s->Wait();  // returns after the second reply
  EXPECT_EQ(a.get(), 200);
  EXPECT_EQ(b.get(), 200);
  EXPECT_EQ(PostImage(*s, body).status, 0);  // no longer listening
}

TEST(ServerTest, BadOptionsAreRefused) {
  ServerOptions o = Options();
  o.budget_bytes = 0;
  EXPECT_FALSE(DiffusionServer::Start(o).ok());
  o = Options();
  o.devices = 0;
  EXPECT_FALSE(DiffusionServer::Start(o).ok());
  o = Options();
  o.queue_capacity = 0;
  EXPECT_FALSE(DiffusionServer::Start(o).ok());
}

}  // namespace
}  // namespace tessera::xema

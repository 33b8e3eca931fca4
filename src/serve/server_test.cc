// The serving core's Server over 127.0.0.1: the toy echo system (echo_test_util.h) on its routes,
// the shell's error replies (404, 413, 415, a malformed request), /healthz, metrics, and Stop.
#include "serve/server.h"

#include <gtest/gtest.h>

#include <string>

#include "serve/echo_test_util.h"
#include "serve/raw_http.h"

namespace tessera::serve {
namespace {

HttpReply Exchange(int port, const std::string& request) {
  auto c = RawHttpConnection::Open("127.0.0.1", port, 30);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->Send(request).ok());
  auto r = c->ReadReply();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : HttpReply{};
}

std::string Post(const std::string& path, const std::string& body,
                 const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

class ServeServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = StartEchoServer();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  std::unique_ptr<Server> server_;
};

TEST_F(ServeServerTest, RoutesJobsAndCountsThem) {
  const HttpReply r = Exchange(server_->port(), Post("/v1/echo", "hi"));
  EXPECT_EQ(r.status, 200);
  const core::Json j = core::Json::parse(r.body);
  EXPECT_EQ(j["echo"], "<hi>");
  const core::Json m = server_->Metrics();
  EXPECT_EQ(m["requests"], 1);
  EXPECT_EQ(m["queue_length"], 0);
  EXPECT_EQ(m["queue_capacity"], 16);
}

TEST_F(ServeServerTest, ShellErrorsAreJsonErrorBodies) {
  auto code_of = [](const HttpReply& r) {
    return core::Json::parse(r.body)["error"]["code"].get<int>();
  };
  HttpReply r = Exchange(server_->port(), Post("/v1/nothing", "{}"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(code_of(r), 404);
  r = Exchange(server_->port(), Post("/v1/echo", std::string(2000, 'x')));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(code_of(r), 413);
  r = Exchange(server_->port(), Post("/v1/echo", "hi", "Content-Encoding: zstd\r\n"));
  EXPECT_EQ(r.status, 415);
  EXPECT_EQ(code_of(r), 415);
  r = Exchange(server_->port(), "NONSENSE\r\n\r\n");
  EXPECT_EQ(r.status, 400);
}

TEST_F(ServeServerTest, HealthzThenStopRefuses) {
  HttpReply r = Exchange(server_->port(),
                         "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: "
                         "close\r\n\r\n");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(core::Json::parse(r.body)["status"], "ok");
  server_->Stop();
  server_->Stop();  // idempotent
  auto job = std::make_shared<EchoJob>();
  const std::optional<Reply> refused = server_->Submit(job);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 503);
}

TEST(ReplyTest, ErrorBodiesAndStatuses) {
  EXPECT_EQ(ErrorBody(429, "x")["error"]["code"], 429);
  EXPECT_EQ(QuoteValue("abc"), "'abc'");
  EXPECT_EQ(QuoteValue(std::string(50, 'a'), 4), "'aaaa...'");
  EXPECT_EQ(HttpStatusOf(core::Infeasible("x")), 507);
  EXPECT_EQ(HttpStatusOf(core::InvalidArgument("x")), 400);
  EXPECT_EQ(HttpStatusOf(core::DeadlineExceeded("x")), 503);
  EXPECT_EQ(HttpStatusOf(core::Internal("x")), 500);
  EXPECT_EQ(DumpReply({{"m", std::string("\xff")}}), "{\"m\":\"\xef\xbf\xbd\"}");
}

}  // namespace
}  // namespace tessera::serve

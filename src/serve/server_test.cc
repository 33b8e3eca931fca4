// The serving core's Server over 127.0.0.1: the toy echo system (echo_test_util.h) on its routes,
// the shell's error replies (404, 413, 415, a malformed request), /healthz, metrics, and Stop.
#include "serve/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "serve/echo_test_util.h"
#include "serve/http_server.h"
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

// cpp-httplib listens with a backlog of 5: of 200 clients connecting at once most had their SYN
// dropped and connected 1 s or 3 s later. A bound shell that has not started its accept thread
// shows the backlog itself: the kernel completes a handshake for every client the backlog holds
// (no thread of ours runs), and drops the SYNs of the rest, whose connects stay in progress.
TEST(HttpServerTest, TheBacklogHoldsABurstOfClientsWithNoAcceptRunning) {
  auto http = HttpServer::Bind(HttpOptions{});
  ASSERT_TRUE(http.ok()) << http.status().ToString();
  const int port = (*http)->port();
  std::vector<int> fds;
  for (int i = 0; i < 200; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    const int rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ASSERT_TRUE(rc == 0 || errno == EINPROGRESS) << "client " << i;
  }
  int established = 0;
  for (int fd : fds) {
    // The loopback handshake is done by the kernel within connect(); the wait only ends a
    // failing run (a dropped SYN is retried after 1 s) instead of hanging it.
    pollfd p{fd, POLLOUT, 0};
    int err = -1;
    socklen_t len = sizeof(err);
    if (poll(&p, 1, 10'000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
        err == 0) {
      ++established;
    }
    close(fd);
  }
  EXPECT_EQ(established, 200) << "the listen backlog dropped " << 200 - established << " SYNs";
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

// The HTTP shell (http_server.h) over raw sockets on 127.0.0.1: framing per RFC 9112, every
// limit's refusal (a JSON body naming it), pipelining, half-close, Range, deadlines, the
// connection cap, streamed replies and a client leaving mid-stream, and Stop. No test bounds
// wall-clock time: waits are generous deadlines that only end a failing run.
#include "serve/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "serve/echo_test_util.h"
#include "serve/http_framing.h"
#include "serve/raw_http.h"

namespace tessera::serve {
namespace {

// A connected blocking socket with a receive timeout (it only ends a failing run).
int ConnectTo(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  timeval tv{60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

void SendAll(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the server closed: the test reads what it answered
    sent += static_cast<size_t>(n);
  }
}

// Everything the server sends until it closes the connection (or the timeout).
std::string ReadUntilClose(int fd) {
  std::string out;
  char buf[8192];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

// Splits a byte stream into the replies it holds (each with a Content-Length).
std::vector<HttpReply> SplitReplies(const std::string& bytes) {
  std::vector<HttpReply> out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t head_end = bytes.find("\r\n\r\n", pos);
    if (head_end == std::string::npos) break;
    auto r = ParseHttpReply(bytes.substr(pos));
    if (!r.ok()) break;
    const auto it = r->headers.find("content-length");
    const size_t len = it != r->headers.end() ? std::stoul(it->second) : 0;
    out.push_back(*r);
    pos = head_end + 4 + len;
  }
  return out;
}

// Sends `bytes` on a new connection and returns every reply until the server closes.
std::vector<HttpReply> ExchangeAll(int port, const std::string& bytes, bool half_close = false) {
  const int fd = ConnectTo(port);
  SendAll(fd, bytes);
  if (half_close) shutdown(fd, SHUT_WR);
  const std::string got = ReadUntilClose(fd);
  close(fd);
  return SplitReplies(got);
}

std::string ErrorMessage(const HttpReply& r) {
  const core::Json j = core::Json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"]["message"].get<std::string>() : "";
}

std::string EchoPost(const std::string& body, const std::string& extra = "", bool close = true) {
  return std::string("POST /v1/echo HTTP/1.1\r\nHost: x\r\n") +
         (close ? "Connection: close\r\n" : "") + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

class HttpShellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = StartEchoServer();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  int port() const { return server_->port(); }
  std::unique_ptr<Server> server_;
};

TEST_F(HttpShellTest, PipelinedRequestsAreAnsweredInOrder) {
  std::string ten;
  for (int i = 0; i < 10; ++i) ten += EchoPost(std::to_string(i), "", i == 9);
  const std::vector<HttpReply> replies = ExchangeAll(port(), ten);
  ASSERT_EQ(replies.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(replies[i].status, 200);
    const std::string want = fmt::format("<{}>", i);
    EXPECT_EQ(core::Json::parse(replies[i].body)["echo"], want);
  }
}

TEST_F(HttpShellTest, TransferEncodingWithContentLengthIsRefusedAndCloses) {
  const std::string req =
      "POST /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n"
      "\r\n2\r\nhi\r\n0\r\n\r\n";
  const std::vector<HttpReply> r = ExchangeAll(port(), req);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 400);
  EXPECT_NE(ErrorMessage(r[0]).find("Transfer-Encoding and Content-Length"), std::string::npos);
  EXPECT_EQ(r[0].headers.at("connection"), "close");
}

TEST_F(HttpShellTest, DifferingContentLengthsAreRefused) {
  const std::string req =
      "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhix";
  const std::vector<HttpReply> r = ExchangeAll(port(), req);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 400);
  EXPECT_NE(ErrorMessage(r[0]).find("differing Content-Length"), std::string::npos);
}

TEST_F(HttpShellTest, AHeaderLineWithoutAColonIsRefused) {
  const std::string req =
      "POST /v1/echo HTTP/1.1\r\nHost: x\r\nno colon here\r\nContent-Length: 2\r\n\r\nhi";
  const std::vector<HttpReply> r = ExchangeAll(port(), req);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 400);
}

TEST_F(HttpShellTest, ChunkedBodyOverTheLimitGetsOne413AndTheConnectionCloses) {
  std::string req = "POST /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  // 4 KiB past the echo server's 1 KiB limit, then more requests that must not be parsed.
  for (int i = 0; i < 4; ++i) req += "400\r\n" + std::string(1024, 'x') + "\r\n";
  req += "0\r\n\r\n";
  req += "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::vector<HttpReply> r = ExchangeAll(port(), req);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 413);
  EXPECT_NE(ErrorMessage(r[0]).find("max_body_bytes = 1024"), std::string::npos);
}

TEST_F(HttpShellTest, ExpectContinueIsAnsweredBeforeTheBody) {
  const int fd = ConnectTo(port());
  SendAll(fd,
          "POST /v1/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nExpect: 100-continue\r\n"
          "Content-Length: 2\r\n\r\n");
  char buf[256];
  const ssize_t n = recv(fd, buf, sizeof(buf), 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)).rfind("HTTP/1.1 100 Continue", 0), 0u);
  SendAll(fd, "hi");
  auto r = ParseHttpReply(ReadUntilClose(fd));
  close(fd);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpShellTest, UnknownMethodsAndContentLengthsOutOfRange) {
  std::vector<HttpReply> r = ExchangeAll(port(), "BREW /v1/echo HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 400);
  r = ExchangeAll(port(),
                  "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: "
                  "99999999999999999999999\r\n\r\nhi");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 413);  // a number past any limit: refused from the head
  r = ExchangeAll(port(), "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\nhi");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 400);
}

TEST_F(HttpShellTest, HalfClosedClientsGetTheirReply) {
  const std::vector<HttpReply> r = ExchangeAll(port(), EchoPost("hi", "", false), true);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 200);
  EXPECT_EQ(core::Json::parse(r[0].body)["echo"], "<hi>");
}

TEST_F(HttpShellTest, RangeIsIgnored) {
  std::string ranges = "bytes=0-";
  for (int i = 0; i < 500; ++i) ranges += ",0-";
  const std::vector<HttpReply> r = ExchangeAll(port(), EchoPost("hi", "Range: " + ranges + "\r\n"));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 200);
  EXPECT_EQ(core::Json::parse(r[0].body)["echo"], "<hi>");
}

TEST_F(HttpShellTest, UnsupportedContentTypeIs415) {
  const std::vector<HttpReply> r = ExchangeAll(
      port(),
      EchoPost("--b\r\n\r\nx\r\n--b--", "Content-Type: multipart/form-data; boundary=b\r\n"));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 415);
  EXPECT_NE(ErrorMessage(r[0]).find("multipart/form-data"), std::string::npos);
  for (const auto& [name, value] : r[0].headers) {
    EXPECT_EQ(value.find("exception"), std::string::npos) << name;
  }
}

TEST_F(HttpShellTest, TooManyHeadersAndTooLargeAHeadAre431) {
  std::string many;
  for (int i = 0; i < 150; ++i) {
    many += "X-";
    many += std::to_string(i);
    many += ": v\r\n";
  }
  std::vector<HttpReply> r = ExchangeAll(port(), EchoPost("hi", many));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 431);
  EXPECT_NE(ErrorMessage(r[0]).find("max_header_count = 100"), std::string::npos);
  r = ExchangeAll(port(), EchoPost("hi", "X-Big: " + std::string(20000, 'a') + "\r\n"));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 431);
  EXPECT_NE(ErrorMessage(r[0]).find("max_header_bytes"), std::string::npos);
}

TEST_F(HttpShellTest, AHeaderFloodIsCutOffWithoutBeingHeld) {
  // Far past the connection's buffer: refused once the buffer is full, never held whole.
  const int fd = ConnectTo(port());
  SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Flood: ");
  const std::string chunk(64 * 1024, 'a');
  for (int i = 0; i < 256; ++i) {  // up to 16 MiB; the server closes long before
    if (send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) <= 0) break;
  }
  const std::string got = ReadUntilClose(fd);
  close(fd);
  auto r = ParseHttpReply(got);
  if (r.ok()) {
    EXPECT_TRUE(r->status == 431 || r->status == 414 || r->status == 400) << r->status;
  }
}

TEST(HttpShellDeadlineTest, ASlowHeadGets408NamingTheDeadline) {
  HttpOptions o;
  o.header_deadline_s = 0.5;
  auto http = HttpServer::Bind(o);
  ASSERT_TRUE(http.ok());
  (*http)->Get("/healthz", [] { return Reply{200, {{"status", "ok"}}}; });
  (*http)->Listen();
  const int fd = ConnectTo((*http)->port());
  SendAll(fd, "GET /healthz HTTP/1.1\r\n");  // and never the rest
  const std::string got = ReadUntilClose(fd);
  close(fd);
  auto r = ParseHttpReply(got);
  ASSERT_TRUE(r.ok()) << got;
  EXPECT_EQ(r->status, 408);
  EXPECT_NE(ErrorMessage(*r).find("header_deadline_s"), std::string::npos);
  EXPECT_EQ((*http)->Counters()["refused"]["header_deadline"], 1);
}

TEST(HttpShellDeadlineTest, ASlowBodyGets408NamingTheDeadline) {
  HttpOptions o;
  o.body_deadline_s = 0.5;
  auto http = HttpServer::Bind(o);
  ASSERT_TRUE(http.ok());
  (*http)->Post("/p", [](const std::string&) { return Reply{200, {}}; });
  (*http)->Listen();
  const int fd = ConnectTo((*http)->port());
  SendAll(fd, "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab");
  const std::string got = ReadUntilClose(fd);
  close(fd);
  auto r = ParseHttpReply(got);
  ASSERT_TRUE(r.ok()) << got;
  EXPECT_EQ(r->status, 408);
  EXPECT_NE(ErrorMessage(*r).find("body_deadline_s"), std::string::npos);
}

TEST(HttpShellThreadsTest, HandlerThreadsStartOnDemandAndExitOnceIdle) {
  HttpOptions o;
  o.handler_idle_s = 0.05;
  auto http = HttpServer::Bind(o);
  ASSERT_TRUE(http.ok());
  (*http)->Get("/healthz", [] { return Reply{200, {{"status", "ok"}}}; });
  (*http)->Listen();
  EXPECT_EQ((*http)->Counters()["handler_threads"], 0);
  const std::string get = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  for (int round = 0; round < 2; ++round) {
    std::vector<std::thread> clients;
    std::atomic<int> ok{0};
    for (int i = 0; i < 8; ++i) {
      clients.emplace_back([&] {
        auto replies = ExchangeAll((*http)->port(), get);
        if (replies.size() == 1 && replies[0].status == 200) ++ok;
      });
    }
    for (std::thread& t : clients) t.join();
    EXPECT_EQ(ok.load(), 8);
    // Idle: every handler thread exits (the heap is then released, heap_policy.h).
    for (int i = 0; i < 6000 && (*http)->Counters()["handler_threads"] != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ((*http)->Counters()["handler_threads"], 0) << "round " << round;
  }
  // glibc's mallinfo2 counts the program's bytes; a sanitizer's allocator reports zeros.
#if !defined(__SANITIZE_ADDRESS__)
  const core::Json heap = (*http)->Counters()["heap"];
  EXPECT_GT(heap.value("in_use_bytes", int64_t{0}), 0);
#endif
}

TEST(HttpShellThreadsTest, BadThreadAndHeapOptionsAreNamed) {
  HttpOptions o;
  o.handler_idle_s = -1;
  auto http = HttpServer::Bind(o);
  ASSERT_FALSE(http.ok());
  EXPECT_NE(http.status().message().find("handler_idle_s"), std::string::npos);
  o = HttpOptions{};
  o.heap.mmap_threshold_bytes = -5;
  http = HttpServer::Bind(o);
  ASSERT_FALSE(http.ok());
  EXPECT_NE(http.status().message().find("heap: mmap_threshold_bytes = -5"), std::string::npos)
      << http.status().message();
}

TEST(HttpShellCapTest, PastTheConnectionCapA503WithRetryAfter) {
  HttpOptions o;
  o.max_connections = 2;
  auto http = HttpServer::Bind(o);
  ASSERT_TRUE(http.ok());
  (*http)->Get("/healthz", [] { return Reply{200, {{"status", "ok"}}}; });
  (*http)->Listen();
  const int a = ConnectTo((*http)->port());
  const int b = ConnectTo((*http)->port());
  // The first two are held open; wait until the server has them.
  for (int i = 0; i < 6000 && (*http)->Counters()["open_connections"] != 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const int c = ConnectTo((*http)->port());
  const std::string got = ReadUntilClose(c);
  auto r = ParseHttpReply(got);
  ASSERT_TRUE(r.ok()) << got;
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->headers.at("retry-after"), "1");
  EXPECT_NE(ErrorMessage(*r).find("max_connections = 2"), std::string::npos);
  close(a);
  close(b);
  close(c);
}

// A streaming route: n events, one per Write; records whether a Write failed (client gone).
struct StreamProbe {
  std::atomic<int> written{0};
  std::promise<bool> ended;  // true: a Write failed (the client left); false: all written
};

std::unique_ptr<HttpServer> StreamServer(StreamProbe& probe, int events, bool pace) {
  auto http = HttpServer::Bind(HttpOptions{});
  EXPECT_TRUE(http.ok());
  (*http)->PostStream("/v1/stream",
                      [&probe, events, pace](const std::string& body, StreamWriter& w) -> Reply {
                        if (body == "refuse") return ErrorReply(400, "refused before streaming");
                        for (int i = 0; i < events; ++i) {
                          if (!w.Event({{"i", i}})) {
                            probe.ended.set_value(true);
                            return {};
                          }
                          ++probe.written;
                          if (pace) std::this_thread::sleep_for(std::chrono::milliseconds(5));
                        }
                        w.Done();
                        probe.ended.set_value(false);
                        return {};
                      });
  (*http)->Listen();
  return std::move(*http);
}

TEST(HttpShellStreamTest, StreamsEveryEventThenEnds) {
  StreamProbe probe;
  auto http = StreamServer(probe, 20, false);
  const int fd = ConnectTo(http->port());
  SendAll(fd,
          "POST /v1/stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n"
          "\r\ngo");
  const std::string got = ReadUntilClose(fd);
  close(fd);
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(got.find("text/event-stream"), std::string::npos);
  EXPECT_NE(got.find("chunked"), std::string::npos);
  for (int i = 0; i < 20; ++i) {
    EXPECT_NE(got.find("data: {\"i\":" + std::to_string(i) + "}"), std::string::npos) << i;
  }
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos);
  EXPECT_FALSE(probe.ended.get_future().get());
}

TEST(HttpShellStreamTest, AHandlerThatWritesNothingAnswersItsReply) {
  StreamProbe probe;
  auto http = StreamServer(probe, 1, false);
  const std::vector<HttpReply> r = ExchangeAll(
      http->port(),
      "POST /v1/stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 6\r\n\r\n"
      "refuse");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 400);
  EXPECT_EQ(ErrorMessage(r[0]), "refused before streaming");
}

TEST(HttpShellStreamTest, AClientThatLeavesMidStreamIsNoticed) {
  StreamProbe probe;
  auto http = StreamServer(probe, 1000000, true);
  const int fd = ConnectTo(http->port());
  SendAll(fd, "POST /v1/stream HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\ngo");
  char buf[4096];
  std::string got;
  while (got.find("data: {\"i\":3}") == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  std::future<bool> ended = probe.ended.get_future();
  ASSERT_EQ(ended.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_TRUE(ended.get());
  EXPECT_LT(probe.written.load(), 1000000);
  http->Stop();
}

TEST(HttpShellStopTest, StopEndsWithATricklingClientConnected) {
  auto http = HttpServer::Bind(HttpOptions{});
  ASSERT_TRUE(http.ok());
  (*http)->Get("/healthz", [] { return Reply{200, {{"status", "ok"}}}; });
  (*http)->Listen();
  const int fd = ConnectTo((*http)->port());
  SendAll(fd, "GET /heal");
  (*http)->Stop();  // returns although the head never completes
  EXPECT_EQ(ReadUntilClose(fd), "");
  close(fd);
}

TEST(HttpShellDeadlineTest, AnIdleConnectionIsClosedWithoutAReply) {
  HttpOptions o;
  o.header_deadline_s = 0.5;
  auto http = HttpServer::Bind(o);
  ASSERT_TRUE(http.ok());
  (*http)->Get("/healthz", [] { return Reply{200, {{"status", "ok"}}}; });
  (*http)->Listen();
  const int fd = ConnectTo((*http)->port());
  EXPECT_EQ(ReadUntilClose(fd), "");  // no 408 a keep-alive client could mistake for a reply
  close(fd);
  EXPECT_EQ((*http)->Counters()["refused"]["idle_timeout"], 1);
}

// A server whose jobs wait for `release` (the test's hand on the device).
std::unique_ptr<Server> HeldServer(std::shared_future<void> release, double drain_deadline_s) {
  ServerOptions o;
  o.http.drain_deadline_s = drain_deadline_s;
  auto server = Server::Bind(o);
  EXPECT_TRUE(server.ok());
  Server* self = server->get();
  (*server)->http().Post(kEchoPath, [self](const std::string& body) -> Reply {
    auto job = std::make_shared<EchoJob>();
    job->text = body;
    std::future<void> done = job->done.get_future();
    if (auto refused = self->Submit(job)) return *refused;
    done.wait();
    return {200, {{"echo", job->text}}};
  });
  (*server)->Start(std::make_unique<OneJobPerDevice>(1),
                   [release](Job& job, const Placement&, int device, int) {
                     Job* batch[] = {&job};
                     StartBatch(batch, device);
                     release.wait();
                     return core::Status::Ok();
                   });
  return std::move(*server);
}

TEST(ServerStopTest, QueuedRequestsAreAnsweredBeforeStopReturns) {
  std::promise<void> release;
  auto server = HeldServer(release.get_future().share(), 60);
  std::vector<std::future<std::vector<HttpReply>>> replies;
  for (int i = 0; i < 4; ++i) {
    replies.push_back(std::async(std::launch::async, [&server, i] {
      return ExchangeAll(server->port(), EchoPost(std::to_string(i)));
    }));
  }
  for (int i = 0;
       i < 6000 && server->queue_length() + server->Metrics()["in_flight"].get<int64_t>() < 4;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::thread stopper([&server] { server->Stop(); });
  release.set_value();
  stopper.join();
  for (auto& f : replies) {
    const std::vector<HttpReply> r = f.get();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].status, 200);
  }
}

TEST(ServerStopTest, PastTheDrainDeadlineARunningRequestGets503AndStopReturns) {
  std::promise<void> release;
  auto server = HeldServer(release.get_future().share(), 0.3);
  auto reply = std::async(std::launch::async,
                          [&server] { return ExchangeAll(server->port(), EchoPost("stuck")); });
  for (int i = 0; i < 6000 && server->Metrics()["in_flight"] != 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  server->Stop();  // returns although the job never ends
  const std::vector<HttpReply> r = reply.get();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, 503);
  EXPECT_NE(ErrorMessage(r[0]).find("drain_deadline_s"), std::string::npos);
  server.reset();
  release.set_value();  // the abandoned worker ends
}

TEST(HttpFramingTest, ChecksOnTheHead) {
  HttpOptions o;
  RequestHead h{"POST", "/x", {{"Content-Length", "3"}, {"content-length", " 3"}}};
  EXPECT_FALSE(CheckRequestHead(h, o, true).has_value());  // equal values are one
  h.headers = {{"Transfer-Encoding", "gzip, chunked"}};
  auto r = CheckRequestHead(h, o, true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 400);
  h.headers = {{"Content-Length", "-1"}};
  EXPECT_EQ(CheckRequestHead(h, o, true)->status, 400);
  h.headers = {{"Content-Type", "application/json; charset=utf-8"}};
  EXPECT_FALSE(CheckRequestHead(h, o, true).has_value());
  h.headers = {{"Content-Encoding", "zstd"}};
  EXPECT_EQ(CheckRequestHead(h, o, true)->status, 415);
  EXPECT_FALSE(CheckRequestHead(h, o, false).has_value());  // no body route: not checked
  h.target = "/" + std::string(9000, 'a');
  h.headers.clear();
  EXPECT_EQ(CheckRequestHead(h, o, false)->status, 414);
  HttpOptions bad;
  bad.max_header_count = 0;
  EXPECT_NE(ValidateHttpOptions(bad).message().find("max_header_count"), std::string::npos);
}

}  // namespace
}  // namespace tessera::serve

#include "serve/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>

#include "serve/body_decoder.h"
#include "serve/handler_pool.h"
#include "serve/http_exchange.h"
#include "serve/http_framing.h"
#include "serve/http_watchdog.h"

namespace tessera::serve {
namespace http_internal {

struct Route {
  HttpServer::PostHandler post;
  HttpServer::GetHandler get;
  HttpServer::StreamHandler stream;
  std::string content_type;
  bool has_body() const { return post != nullptr || stream != nullptr; }
};

// One request on a connection (libmicrohttpd's request context), owned by the I/O thread.
struct PendingRequest {
  WatchedConnection* conn = nullptr;
  const Route* route = nullptr;
  std::unique_ptr<BodyDecoder> decoder;
  std::string body;
  bool answered = false;  // a reply was queued (a refusal, or the handler's)
  bool dispatched = false;
  std::shared_ptr<Exchange> exchange;
};

}  // namespace http_internal

namespace {

using http_internal::PendingRequest;
using http_internal::Route;
using Phase = WatchedConnection::Phase;

// Raises the soft limit on open files to the hard limit: every connection holds one.
void RaiseOpenFileLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(const HttpOptions& o)
      : options(o), pool(o.http_threads), watchdog(o, [this](const char* c) { Count(c); }) {}

  const HttpOptions options;
  std::map<std::pair<std::string, std::string>, Route> routes;  // (method, path)
  int listen_fd = -1;
  MHD_Daemon* daemon = nullptr;
  HandlerPool pool;
  ConnectionWatchdog watchdog;

  mutable std::mutex mu;  // guards counters, in_flight, stopping
  std::condition_variable idle_cv;
  std::map<std::string, int64_t> counters;
  std::set<std::shared_ptr<Exchange>> in_flight;
  bool stopping = false;
  std::mutex stop_mu;
  bool stopped = false;

  void Count(const std::string& name) {
    // Called under the watchdog's lock too: its own mutex only.
    std::lock_guard<std::mutex> lock(counter_mu);
    ++counters[name];
  }
  std::mutex counter_mu;

  MHD_Result Access(MHD_Connection* connection, const char* url, const char* method,
                    const char* upload_data, size_t* upload_data_size, void** req_cls);
  MHD_Result Begin(MHD_Connection* connection, const char* url, const char* method,
                   PendingRequest& r);
  MHD_Result Dispatch(MHD_Connection* connection, PendingRequest& r);
  void RefuseMidBody(PendingRequest& r, MHD_Connection* connection, int status,
                     const std::string& message);
  void Finished(const std::shared_ptr<Exchange>& ex);
};

namespace {

MHD_Result QueueJson(MHD_Connection* connection, int status, const std::string& json, bool close,
                     const std::string& content_type = "application/json") {
  MHD_Response* res = MHD_create_response_from_buffer(json.size(), const_cast<char*>(json.data()),
                                                      MHD_RESPMEM_MUST_COPY);
  if (res == nullptr) return MHD_NO;
  MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, content_type.c_str());
  if (close) MHD_add_response_header(res, MHD_HTTP_HEADER_CONNECTION, "close");
  const MHD_Result rc = MHD_queue_response(connection, static_cast<unsigned>(status), res);
  MHD_destroy_response(res);
  return rc;
}

MHD_Result QueueError(MHD_Connection* connection, int status, const std::string& message,
                      bool close) {
  return QueueJson(connection, status, DumpReply(ErrorBody(status, message)), close);
}

MHD_Result CollectHeader(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* head = static_cast<RequestHead*>(cls);
  head->headers.emplace_back(key != nullptr ? key : "", value != nullptr ? value : "");
  return MHD_YES;
}

MHD_Result OnAccess(void* cls, MHD_Connection* connection, const char* url, const char* method,
                    const char* /*version*/, const char* upload_data, size_t* upload_data_size,
                    void** req_cls) {
  return static_cast<HttpServer::Impl*>(cls)->Access(connection, url, method, upload_data,
                                                     upload_data_size, req_cls);
}

void OnCompleted(void* cls, MHD_Connection*, void** req_cls, MHD_RequestTerminationCode) {
  auto* r = static_cast<PendingRequest*>(*req_cls);
  if (r == nullptr) return;
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  if (r->conn != nullptr) impl->watchdog.SetPhase(r->conn, Phase::kHead);
  if (r->exchange != nullptr) r->exchange->Detach();
  delete r;
  *req_cls = nullptr;
}

void OnConnection(void* cls, MHD_Connection* connection, void** socket_context,
                  MHD_ConnectionNotificationCode code) {
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    *socket_context = impl->watchdog.Opened(info != nullptr ? info->connect_fd : -1);
  } else if (*socket_context != nullptr) {
    impl->watchdog.Closed(static_cast<WatchedConnection*>(*socket_context));
    *socket_context = nullptr;
  }
}

}  // namespace

MHD_Result HttpServer::Impl::Access(MHD_Connection* connection, const char* url,
                                    const char* method, const char* upload_data,
                                    size_t* upload_data_size, void** req_cls) {
  auto* r = static_cast<PendingRequest*>(*req_cls);
  if (r == nullptr) {
    r = new PendingRequest;
    *req_cls = r;
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    r->conn = info != nullptr ? static_cast<WatchedConnection*>(info->socket_context) : nullptr;
    if (r->conn != nullptr) {
      if (watchdog.refused(r->conn)) return MHD_NO;
      watchdog.SetPhase(r->conn, Phase::kBody);
    }
    return Begin(connection, url, method, *r);
  }
  if (*upload_data_size > 0) {
    const std::string_view piece(upload_data, *upload_data_size);
    *upload_data_size = 0;
    if (r->answered || r->decoder == nullptr) return MHD_YES;  // the rest is dropped
    const DecodeResult d = r->decoder->Feed(piece, r->body);
    if (d == DecodeResult::kOk) return MHD_YES;
    // libmicrohttpd cannot queue a reply part-way through a body: the refusal is written on
    // the socket here (the I/O thread, which is reading, not writing) and the connection ends.
    r->answered = true;
    const bool too_large = d == DecodeResult::kTooLarge;
    Count(too_large ? "max_body_bytes" : "bad_body");
    RefuseMidBody(*r, connection, too_large ? 413 : 400,
                  too_large ? fmt::format("body too large: more than max_body_bytes = {} bytes",
                                          options.max_body_bytes)
                            : "the body could not be decoded (bad gzip, deflate or br data)");
    return MHD_NO;
  }
  if (r->answered && r->exchange == nullptr) return MHD_YES;
  return Dispatch(connection, *r);
}

// Writes the refusal straight on the connection's socket and shuts it down (the watchdog
// leaves it alone from now on); the caller then returns MHD_NO and the connection closes.
void HttpServer::Impl::RefuseMidBody(PendingRequest& r, MHD_Connection* connection, int status,
                                     const std::string& message) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (info == nullptr) return;
  if (r.conn != nullptr) watchdog.MarkRefused(r.conn);
  WriteErrorAndShutdown(info->connect_fd, status, message);
}

MHD_Result HttpServer::Impl::Begin(MHD_Connection* connection, const char* url,
                                   const char* method, PendingRequest& r) {
  RequestHead head;
  head.method = method != nullptr ? method : "";
  head.target = url != nullptr ? url : "";
  MHD_get_connection_values(connection, MHD_HEADER_KIND, &CollectHeader, &head);
  const auto it = routes.find({head.method, head.target});
  r.route = it != routes.end() ? &it->second : nullptr;
  if (auto refusal = CheckRequestHead(head, options, r.route != nullptr && r.route->has_body())) {
    r.answered = true;
    Count(refusal->counter);
    return QueueError(connection, refusal->status, refusal->message, refusal->close);
  }
  if (r.route == nullptr) {
    r.answered = true;
    Count("no_route");
    std::string why = "no such route: " + head.method + " " + head.target;
    if (why.size() > 200) why = core::Utf8Prefix(why, 200) + "...";
    return QueueError(connection, 404, why, true);
  }
  if (r.route->has_body()) {
    std::string coding;
    for (const auto& [name, value] : head.headers) {
      if (HeaderNameIs(name, "content-encoding")) coding = value;
    }
    auto decoder = BodyDecoder::For(coding, options.max_body_bytes);
    if (decoder.ok()) r.decoder = std::move(*decoder);
    // (an unknown coding was refused 415 by CheckRequestHead)
  }
  return MHD_YES;
}

MHD_Result HttpServer::Impl::Dispatch(MHD_Connection* connection, PendingRequest& r) {
  if (r.exchange != nullptr) {
    // Resumed: the handler has answered, or started streaming, or the server gave up on it.
    std::optional<Exchange::Ready> ready = r.exchange->TakeReady();
    if (!ready.has_value()) return MHD_YES;
    r.answered = true;
    if (!ready->stream) return QueueJson(connection, ready->status, ready->json, false);
    MHD_Response* res = r.exchange->MakeStreamResponse();
    if (res == nullptr) return MHD_NO;
    MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, r.route->content_type.c_str());
    MHD_add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    const MHD_Result rc = MHD_queue_response(connection, MHD_HTTP_OK, res);
    MHD_destroy_response(res);
    return rc;
  }
  if (r.decoder != nullptr && r.decoder->Finish() != DecodeResult::kOk) {
    r.answered = true;
    Count("bad_body");
    return QueueError(connection, 400, "the body could not be decoded (a compressed body cut short)",
                      true);
  }
  if (r.conn != nullptr) watchdog.SetPhase(r.conn, Phase::kBusy);
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  auto ex = std::make_shared<Exchange>(connection, info != nullptr ? info->connect_fd : -1);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping) {
      r.answered = true;
      return QueueError(connection, 503, "server is stopping", true);
    }
    in_flight.insert(ex);
  }
  r.exchange = ex;
  ex->Suspend();  // before the handler can run: it resumes the connection
  const Route* route = r.route;
  std::string body = std::move(r.body);
  const bool submitted = pool.Submit([this, ex, route, body = std::move(body)] {
    Reply reply;
    try {
      if (route->stream) {
        reply = route->stream(body, ex->writer());
      } else if (route->post) {
        reply = route->post(body);
      } else {
        reply = route->get();
      }
    } catch (...) {
      reply = ErrorReply(500, "internal error");
    }
    ex->Answer(reply.status, DumpReply(reply.body));
    Finished(ex);
  });
  if (!submitted) ex->Abandon(503, DumpReply(ErrorBody(503, "server is stopping")));
  return MHD_YES;
}

void HttpServer::Impl::Finished(const std::shared_ptr<Exchange>& ex) {
  std::lock_guard<std::mutex> lock(mu);
  in_flight.erase(ex);
  idle_cv.notify_all();
}

HttpServer::HttpServer(const HttpOptions& options)
    : options_(options), impl_(std::make_unique<Impl>(options)) {}

HttpServer::~HttpServer() { Stop(); }

core::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Bind(const HttpOptions& options) {
  RETURN_IF_ERROR(ValidateHttpOptions(options));
  RaiseOpenFileLimit();
  std::unique_ptr<HttpServer> s(new HttpServer(options));
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto fail = [&](const char* what) {
    if (fd >= 0) ::close(fd);
    return core::Unavailable(
        fmt::format("cannot {} {}:{}: address in use or not allowed", what, options.host,
                    options.port));
  };
  if (fd < 0) return fail("open a socket for");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(options.port));
  if (inet_pton(AF_INET, options.host == "localhost" ? "127.0.0.1" : options.host.c_str(),
                &a.sin_addr) != 1) {
    return fail("resolve (IPv4 addresses only)");
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return fail("bind");
  if (::listen(fd, SOMAXCONN) != 0) return fail("listen on");
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  s->port_ = ntohs(a.sin_port);
  s->impl_->listen_fd = fd;
  return s;
}

void HttpServer::Post(const std::string& path, PostHandler handler) {
  impl_->routes[{"POST", path}] = Route{std::move(handler), nullptr, nullptr, ""};
}

void HttpServer::Get(const std::string& path, GetHandler handler) {
  impl_->routes[{"GET", path}] = Route{nullptr, std::move(handler), nullptr, ""};
}

void HttpServer::PostStream(const std::string& path, StreamHandler handler,
                            const std::string& content_type) {
  impl_->routes[{"POST", path}] = Route{nullptr, nullptr, std::move(handler), content_type};
}

void HttpServer::Listen() {
  Impl& m = *impl_;
  if (m.daemon != nullptr || m.listen_fd < 0) return;
  // The connection's buffer: the largest head the shell checks itself (431 JSON) and room
  // for the reply's headers; a larger head is refused by libmicrohttpd itself.
  const auto pool_bytes = static_cast<size_t>(2 * options_.max_header_bytes + 8192);
  const auto timeout_s = static_cast<unsigned>(
      std::max({60.0, options_.header_deadline_s, options_.body_deadline_s}) + 1);
  m.daemon = MHD_start_daemon(
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC, 0, nullptr,
      nullptr, &OnAccess, &m, MHD_OPTION_LISTEN_SOCKET, m.listen_fd,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool_bytes, MHD_OPTION_CONNECTION_LIMIT,
      static_cast<unsigned>(options_.max_connections + 256), MHD_OPTION_CONNECTION_TIMEOUT,
      timeout_s, MHD_OPTION_NOTIFY_COMPLETED, &OnCompleted, &m, MHD_OPTION_NOTIFY_CONNECTION,
      &OnConnection, &m, MHD_OPTION_END);
  CHECK(m.daemon != nullptr);
  m.watchdog.Start();
}

void HttpServer::StopAccepting() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.stop_mu);
  if (m.daemon != nullptr) {
    const MHD_socket fd = MHD_quiesce_daemon(m.daemon);
    if (fd != MHD_INVALID_SOCKET) ::close(fd);
    m.listen_fd = -1;
  } else if (m.listen_fd >= 0) {
    ::close(m.listen_fd);
    m.listen_fd = -1;
  }
}

void HttpServer::Stop() {
  StopAccepting();
  Impl& m = *impl_;
  std::lock_guard<std::mutex> stop_lock(m.stop_mu);
  if (m.stopped) return;
  m.stopped = true;
  std::set<std::shared_ptr<Exchange>> left;
  {
    std::unique_lock<std::mutex> lock(m.mu);
    m.stopping = true;
    // Handlers already running may finish within the drain deadline; streams are told to stop
    // at once (their clients see the end of the stream).
    for (const auto& ex : m.in_flight) ex->Cancel();
    m.idle_cv.wait_for(lock, std::chrono::duration<double>(options_.drain_deadline_s),
                       [&] { return m.in_flight.empty(); });
    left = m.in_flight;
  }
  for (const auto& ex : left) {
    ex->Abandon(503, DumpReply(ErrorBody(
                         503, fmt::format("server stopped: the request did not finish within "
                                          "drain_deadline_s = {} s",
                                          options_.drain_deadline_s))));
  }
  m.watchdog.Stop();
  if (m.daemon != nullptr) {
    MHD_stop_daemon(m.daemon);  // closes every connection
    m.daemon = nullptr;
  }
  m.pool.Stop(0.1);
}

core::Json HttpServer::Counters() const {
  core::Json refused = core::Json::object();
  {
    std::lock_guard<std::mutex> lock(impl_->counter_mu);
    for (const auto& [name, n] : impl_->counters) refused[name] = n;
  }
  return {{"open_connections", impl_->watchdog.open_connections()}, {"refused", refused}};
}

std::string HttpServer::url() const { return fmt::format("http://{}:{}", options_.host, port_); }

}  // namespace tessera::serve

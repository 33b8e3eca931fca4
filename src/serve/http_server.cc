#include "serve/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

namespace tessera::serve {
namespace {

void JsonReply(httplib::Response& res, int status, const core::Json& body) {
  res.status = status;
  res.set_content(DumpReply(body), "application/json");
}

}  // namespace

HttpServer::HttpServer(const HttpOptions& options)
    : options_(options), http_(std::make_unique<httplib::Server>()) {}

HttpServer::~HttpServer() { Stop(); }

core::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Bind(const HttpOptions& options) {
  std::unique_ptr<HttpServer> s(new HttpServer(options));
  httplib::Server& http = *s->http_;
  const int threads = options.http_threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http.set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  http.set_read_timeout(5, 0);
  http.set_write_timeout(5, 0);
  // cpp-httplib calls this outside its handler try block: an exception here would end the
  // process, so none may leave it.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    try {
      std::string why = res.status == 404   ? "no such route: " + req.method + " " + req.path
                        : res.status == 413 ? "body too large"
                                            : "bad request";
      if (why.size() > 200) why = core::Utf8Prefix(why, 200) + "...";
      JsonReply(res, res.status, ErrorBody(res.status, why));
    } catch (...) {
      res.set_content(
          "{\"error\": {\"message\": \"error\", \"code\": " + std::to_string(res.status) + "}}",
          "application/json");
    }
  });

  // cpp-httplib listens with a backlog of 5: a burst of connections (200 clients at once)
  // overflows it, the kernel drops their SYNs and the clients wait 1 s, 3 s, ... to retry.
  // Listening again on the bound socket raises the backlog (Linux updates it in place).
  auto listen_fd = std::make_shared<int>(-1);
  http.set_socket_options([listen_fd](int sock) {
    httplib::default_socket_options(sock);
    *listen_fd = sock;
  });
  s->port_ = options.port == 0
                 ? http.bind_to_any_port(options.host)
                 : (http.bind_to_port(options.host, options.port) ? options.port : -1);
  if (s->port_ <= 0) {
    return core::Unavailable(fmt::format("cannot listen on {}:{}: address in use or not allowed",
                                         options.host, options.port));
  }
  if (*listen_fd >= 0 && ::listen(*listen_fd, SOMAXCONN) != 0) {
    return core::Unavailable(fmt::format("cannot listen on {}:{} with a backlog of {}",
                                         options.host, s->port_, SOMAXCONN));
  }
  return s;
}

void HttpServer::Post(const std::string& path,
                      std::function<Reply(const std::string& body)> handler) {
  // The body is read here rather than by cpp-httplib, so that the limit holds for every
  // framing: with Content-Length cpp-httplib answers 413 before reading; chunked and
  // read-until-close bodies it reads without a limit; gzip and brotli bodies it decodes, and
  // the limit must bound the decoded bytes.
  const auto max_body = static_cast<size_t>(options_.max_body_bytes);
  http_->Post(path, [handler = std::move(handler), max_body](const httplib::Request& req,
                                                             httplib::Response& res,
                                                             const httplib::ContentReader& read) {
    // cpp-httplib decodes gzip, deflate and br and passes any other coding through as if it
    // were none; refuse it instead of parsing encoded bytes.
    const std::string coding = req.get_header_value("Content-Encoding");
    if (!coding.empty() && coding != "identity" && coding != "gzip" && coding != "deflate" &&
        coding != "br") {
      JsonReply(res, 415,
                ErrorBody(415, "Content-Encoding: got '" + core::Utf8Prefix(coding, 40) +
                                   "', must be gzip, deflate, br or none"));
      return;
    }
    std::string body;
    bool too_large = false;
    const bool read_ok = read([&](const char* data, size_t n) {
      too_large = body.size() + n > max_body;
      if (!too_large) body.append(data, n);
      return !too_large;
    });
    if (too_large || res.status == 413) {
      JsonReply(res, 413,
                ErrorBody(413, fmt::format("body too large: more than {} bytes", max_body)));
    } else if (!read_ok) {
      // 415 (an unknown Content-Encoding) as cpp-httplib set it; 400 otherwise.
      const int status = res.status == 415 ? 415 : 400;
      JsonReply(res, status,
                ErrorBody(status, status == 415 ? "unsupported Content-Encoding"
                                                : "the body could not be read (cut short, "
                                                  "bad chunked framing or bad compression)"));
    } else {
      const Reply r = handler(body);
      JsonReply(res, r.status, r.body);
    }
  });
}

void HttpServer::Get(const std::string& path, std::function<Reply()> handler) {
  http_->Get(path, [handler = std::move(handler)](const httplib::Request&, httplib::Response& res) {
    const Reply r = handler();
    JsonReply(res, r.status, r.body);
  });
}

void HttpServer::Listen() {
  if (listener_.joinable()) return;
  listener_ = std::thread([this] { http_->listen_after_bind(); });
}

void HttpServer::Stop() {
  http_->stop();
  if (listener_.joinable()) listener_.join();
}

std::string HttpServer::url() const { return fmt::format("http://{}:{}", options_.host, port_); }

}  // namespace tessera::serve

// HttpServer: the HTTP shell of a server (cpp-httplib): the listener, the handler threads,
// the limits every request is held to, and the error replies; a system plugs its routes in.
//
// Listener: binds host:port (port 0: any free port, see port()) and listens with a backlog of
// SOMAXCONN (cpp-httplib's 5 would drop the SYNs of a burst of clients); a pool of
// http_threads handler threads; 5 s read and write timeouts.
// Bodies (Post routes): read by the shell, at most max_body_bytes for every framing
// (Content-Length, chunked, until close); gzip, deflate and brotli bodies are decoded by
// cpp-httplib and the limit holds for the decoded bytes (a 64 KiB gzip body can decode to
// 64 MiB).
// Error replies, {"error": {"message": one line, "code": status}} (reply.h):
//   413 a body over max_body_bytes, 415 a Content-Encoding other than gzip, deflate, br or
//   identity, 400 a body cut short or badly framed (or badly compressed), 404 an unknown route
//   (method + path, named in the message), 414 a request line over 8 KiB, 400 a malformed
//   request. Replies are dumped with invalid UTF-8 replaced, and the error handler (outside
//   cpp-httplib's try) never throws: no request can end the process.
// Lifetime: Bind, then Post / Get routes, then Listen (the listener thread); Stop stops the
// listener (the handler pool finishes writing the replies it has) and joins it; idempotent.
// Errors: Bind returns Unavailable when the address cannot be bound or listened on.
// Thread-safety: routes are added before Listen; handlers run on the pool's threads; Stop may
// be called from any thread but a handler.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/status.h"
#include "serve/reply.h"

namespace httplib {
class Server;
}

namespace tessera::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  int64_t max_body_bytes = 64 * 1024;
  int http_threads = 64;
};

class HttpServer {
 public:
  static core::StatusOr<std::unique_ptr<HttpServer>> Bind(const HttpOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // A POST route: `handler` gets the body (within the limits above) and returns the reply.
  void Post(const std::string& path, std::function<Reply(const std::string& body)> handler);
  // A GET route.
  void Get(const std::string& path, std::function<Reply()> handler);

  void Listen();
  void Stop();

  int port() const { return port_; }
  std::string url() const;  // "http://HOST:PORT"

 private:
  explicit HttpServer(const HttpOptions& options);

  HttpOptions options_;
  int port_ = 0;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
};

}  // namespace tessera::serve

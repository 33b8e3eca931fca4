// HttpServer: the HTTP shell of a server, on libmicrohttpd (one epoll I/O thread; a
// connection that is idle, slow or flooding costs its buffer, a few KiB up to
// 2 x max_header_bytes, and no thread): the listener, the limits every request is held to
// (http_options.h), the error replies, and the handler pool that runs the routes.
//
// Listener: binds host:port (port 0: any free port, see port()) with a backlog of SOMAXCONN.
// Requests: the I/O thread reads the head, checks it (http_framing.h: framing per RFC 9112,
// request line 414, header count and bytes 431, Content-Encoding / Content-Type 415), reads
// and decodes the body (body_decoder.h: at most max_body_bytes decoded bytes, 413 and close
// past it), then suspends the connection and hands the request to the handler pool
// (handler_pool.h, http_threads threads); the reply is written by the I/O thread when the
// handler returns. Pipelined requests are answered in order; a client that half-closes after
// its request still gets the reply; Range is ignored (replies are always whole).
// Deadlines (a watchdog thread): a head not complete header_deadline_s after the connection
// opened or its previous reply, or a body not complete body_deadline_s after its head, gets
// 408 and the connection closes. Past max_connections open connections, a new one is
// answered 503 with Retry-After: 1 at once and closed.
// Error replies, {"error": {"message": one line naming the limit or field, "code": status}}:
//   400 framing (Transfer-Encoding with Content-Length, differing Content-Length values, a
//   Transfer-Encoding other than chunked), a body cut short or badly compressed; 404 an
//   unknown route (method + path); 408, 413, 414, 415, 431, 503 as above. A handler that
//   throws gets 500 "internal error" (no exception text in any header or body). Refusals are
//   counted by name (Counters(), served in /v1/metrics), never logged.
// Gaps (libmicrohttpd 0.9.75 answers these itself, not in JSON): a head larger than the
// connection buffer (2 x max_header_bytes + 8 KiB) gets its own 431 or 414; a malformed
// request line or a header line without a colon its own 400; both close the connection.
// Streaming (PostStream): the handler writes through a StreamWriter (stream_writer.h).
// Lifetime: Bind, then Post / Get / PostStream routes, then Listen (the I/O thread); Stop
// stops accepting, lets the handlers already running finish within drain_deadline_s, answers
// the ones still running 503, closes every connection and returns (always); idempotent.
// Errors: Bind returns InvalidArgument for bad options, Unavailable when the address cannot
// be bound or listened on.
// Thread-safety: routes are added before Listen; handlers run on the pool's threads; Stop may
// be called from any thread but a handler.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "core/json_util.h"
#include "core/status.h"
#include "serve/http_options.h"
#include "serve/reply.h"
#include "serve/stream_writer.h"

namespace tessera::serve {

class HttpServer {
 public:
  using PostHandler = std::function<Reply(const std::string& body)>;
  using GetHandler = std::function<Reply()>;
  // Writes its reply through `writer`, or writes nothing and returns the reply.
  using StreamHandler = std::function<Reply(const std::string& body, StreamWriter& writer)>;

  static core::StatusOr<std::unique_ptr<HttpServer>> Bind(const HttpOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // A POST route: `handler` gets the decoded body (within the limits above).
  void Post(const std::string& path, PostHandler handler);
  // A GET route.
  void Get(const std::string& path, GetHandler handler);
  // A streaming POST route (see StreamWriter); `content_type` of the streamed reply.
  void PostStream(const std::string& path, StreamHandler handler,
                  const std::string& content_type = "text/event-stream");

  void Listen();
  // Stops accepting new connections (the listening socket closes); Stop does it too.
  void StopAccepting();
  void Stop();

  // {"open_connections": n, "refused": {"<limit or kind>": count, ...}}
  core::Json Counters() const;
  int port() const { return port_; }
  std::string url() const;  // "http://HOST:PORT"

  struct Impl;  // libmicrohttpd's side (http_server.cc)

 private:
  explicit HttpServer(const HttpOptions& options);

  HttpOptions options_;
  int port_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::serve

// HttpServer: the HTTP shell of a server, on Boost.Beast over Asio (libboost-dev): one I/O
// thread reads and writes every connection; a connection that is idle, slow or flooding costs
// its socket, a session and a read buffer of at most max_header_bytes + 16 KiB, and no thread.
// The routes' handlers run on the handler pool (handler_pool.h: at most http_threads threads,
// started on demand, each exiting after handler_idle_s idle), never on the I/O thread. (Why
// Beast and not libmicrohttpd: docs/architecture.md, serving.)
// Memory: Bind applies options.heap to the process (heap_policy.h: bounded malloc arenas,
// fixed trim and mmap thresholds); when the last handler thread exits idle, the freed heap is
// returned to the kernel (release_when_idle), so an idle server's RSS does not keep each
// burst's high-water.
//
// Listener: binds host:port (port 0: any free port, see port()) with a backlog of SOMAXCONN.
// Requests (http_session.h): the head is read within header_deadline_s of the connection
// opening or of the previous reply and checked (Beast's parser and http_framing.h: framing
// per RFC 9112, request line 414, header count and bytes 431, Content-Encoding and
// Content-Type 415); the body within body_deadline_s, at most max_body_bytes, decoded
// (body_decoder.h: the limit holds for the decoded bytes); then the handler runs on the pool
// and the I/O thread writes its reply. Pipelined requests are answered in order; a client
// that half-closes after its request still gets the reply; Range is ignored (replies are
// always whole); Expect: 100-continue is answered. Past max_connections open connections a
// new one is answered 503 with Retry-After: 1 at once and closed.
// Error replies, {"error": {"message": one line naming the limit or field, "code": status}},
// each with Connection: close (the session then drains what the client still sends, briefly,
// so that the client reads the refusal): 400 malformed request line or header, framing
// (Transfer-Encoding with Content-Length, differing Content-Length values, a
// Transfer-Encoding other than chunked), bad chunked framing or compression; 404 an unknown
// route (method + path); 408, 413, 414, 415, 431, 503 as above. A handler that throws gets
// 500 "internal error": no exception text in any header or body. Refusals are counted by
// name (Counters(), in /v1/metrics "http"), never logged.
// Streaming (PostStream): the handler writes a chunked reply through a StreamWriter
// (stream_writer.h), which says when the client left.
// Lifetime: Bind, then Post / Get / PostStream routes, then Listen (the I/O thread); Stop
// stops accepting, ends the streams, lets the handlers already running finish within
// drain_deadline_s (their replies are written), then closes every connection and returns,
// always (a handler still running is left to end on its own; its reply is dropped).
// Idempotent; the destructor calls it.
// Errors: Bind returns InvalidArgument for bad options or a host that is not an IPv4
// address, Unavailable when the address cannot be bound or listened on, Internal when glibc
// refuses a heap setting.
// Thread-safety: routes are added before Listen; handlers run on the pool's threads;
// StopAccepting, Stop and Counters may be called from any thread but a handler.
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

  // {"open_connections": n, "handler_threads": threads now started, "refused": {"<limit or
  // kind>": count, ...}, "heap": the process's malloc view (HeapStats, heap_policy.h)}
  core::Json Counters() const;
  int port() const { return port_; }
  std::string url() const;  // "http://HOST:PORT"

  struct Impl;  // the listener and the I/O thread (http_server.cc)

 private:
  explicit HttpServer(const HttpOptions& options);

  HttpOptions options_;
  int port_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::serve

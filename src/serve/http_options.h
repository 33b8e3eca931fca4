// HttpOptions: the listener and the limits of the serving core's HTTP shell (http_server.h).
// Every limit is a named option with a default; each refusal is a JSON error body
// ({"error": {"message", "code"}}) whose message names the option and its value.
//
//   header_deadline_s   the whole request head (request line and headers) must arrive within
//                       this long of the connection opening or of the previous reply: 408,
//                       close; a connection that sent no byte of a request by then (idle, or
//                       kept alive between requests) is closed without a reply
//   body_deadline_s     the whole body must arrive within this long of the head: 408, close
//   max_header_bytes    request line + headers: 431 (414 for a request line over 8 KiB)
//   max_header_count    header fields: 431
//   max_body_bytes      decoded body bytes: 413, then the connection closes
//   max_connections     open connections: the next one is answered 503 with Retry-After at
//                       once and closed
//   drain_deadline_s    Stop: how long requests already being handled may take to finish
//   http_threads        the handler pool: the most threads that run the routes' handlers at
//                       once (never the I/O thread); a handler waiting for a job holds one
//   handler_idle_s      a handler thread idle this long exits (threads start on demand), so an
//                       idle server holds none, nor the memory each keeps (0: threads stay)
//   heap                the process's malloc settings for a long-running server, applied by
//                       HttpServer::Bind (heap_policy.h)
// Units: seconds and bytes. Errors: ValidateHttpOptions returns InvalidArgument naming the
// first bad option. Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "serve/heap_policy.h"

namespace tessera::serve {

inline constexpr int64_t kMaxRequestLineBytes = 8 * 1024;

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  int64_t max_body_bytes = 64 * 1024;
  int http_threads = 64;
  double handler_idle_s = 2;
  double header_deadline_s = 10;
  double body_deadline_s = 30;
  int64_t max_header_bytes = 16 * 1024;
  int max_header_count = 100;
  int max_connections = 4096;
  double drain_deadline_s = 30;
  HeapOptions heap;
};

core::Status ValidateHttpOptions(const HttpOptions& options);

}  // namespace tessera::serve

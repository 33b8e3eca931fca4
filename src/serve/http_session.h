// The HTTP shell's internals (http_server.h), on Boost.Beast over Asio: the state the
// listener, the sessions and the handlers share (ShellState), and one connection's session.
//
// Session: one connection, driven by the one I/O thread: read a head (Beast's parser, at most
// max_header_bytes, within header_deadline_s: 408, or a silent close when not one byte of it
// came, an idle connection), check it (http_framing.h), read the body
// (within body_deadline_s, at most max_body_bytes raw, then decoded by body_decoder.h), hand
// the request to the handler pool and wait (no read is pending while a plain handler runs);
// the handler's reply is posted back to the I/O thread and written; then the next request
// (pipelined bytes are already in the buffer) or the close. A refusal is written with
// Connection: close, then the session drains what the client still sends (at most 1 MiB or
// 2 s) before closing, so that the client reads the refusal rather than a reset.
// Streamed replies (HttpServer::PostStream): the handler writes through the session's
// StreamWriter (chunked transfer coding); while it streams, a read watches the socket and an
// end of it (the client left) makes Write return false.
// Memory of an idle or slow connection: the socket, the session (~1 KiB) and its read
// buffer (at most max_header_bytes + 16 KiB while a head is read). No thread.
// Thread-safety: a Session is used on the I/O thread only, except its StreamWriter (any one
// handler thread) and the posts of a handler's reply.
#pragma once

#include <boost/asio.hpp>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "serve/handler_pool.h"
#include "serve/heap_policy.h"
#include "serve/http_server.h"

namespace tessera::serve::http_internal {

struct Route {
  HttpServer::PostHandler post;
  HttpServer::GetHandler get;
  HttpServer::StreamHandler stream;
  std::string content_type;
  bool has_body() const { return post != nullptr || stream != nullptr; }
};

class Session;
struct Linger;

// What the listener, every session and the handlers share. The I/O-thread-only members are
// marked; the rest are guarded by mu.
struct ShellState {
  explicit ShellState(const HttpOptions& o)
      : options(o),
        pool(o.http_threads, o.handler_idle_s,
             o.heap.release_when_idle ? std::function<void()>([] { ReleaseFreeHeap(); })
                                      : nullptr) {}

  const HttpOptions options;
  std::map<std::pair<std::string, std::string>, Route> routes;  // (method, path); fixed
  boost::asio::io_context io{1};
  HandlerPool pool;
  std::set<std::shared_ptr<Session>> sessions;  // I/O thread only
  std::set<std::shared_ptr<Linger>> lingering;  // closing after a refusal; I/O thread only

  std::mutex mu;
  std::condition_variable idle_cv;  // in_flight reached 0
  int64_t in_flight = 0;            // requests handed to the pool, not yet answered
  bool stopping = false;
  bool io_stopped = false;  // Stop gave up on what is still running: no more posts to io
  int open_connections = 0;
  std::map<std::string, int64_t> counters;

  void Count(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    ++counters[name];
  }
};

// Starts a session on an accepted socket (I/O thread); it keeps itself alive.
void StartSession(const std::shared_ptr<ShellState>& state, boost::asio::ip::tcp::socket socket);

// Writes 503 (max_connections) on `socket` and closes it (I/O thread).
void RefuseConnection(const std::shared_ptr<ShellState>& state,
                      boost::asio::ip::tcp::socket socket);

// Tells every streaming handler to stop (I/O thread; Stop): its Writes return false.
void CancelAllStreams(ShellState& state);

// Closes every session at once (I/O thread; Stop): streams end; a request whose handler still
// runs is answered 503 naming drain_deadline_s (its handler's reply is dropped).
void CloseAllSessions(ShellState& state);

}  // namespace tessera::serve::http_internal

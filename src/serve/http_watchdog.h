// ConnectionWatchdog: the HTTP shell's table of open connections (http_server.h) and the
// thread that holds them to the whole-head and whole-body deadlines, with the connection cap.
// libmicrohttpd's own timeout is per read (a client sending one byte every few seconds never
// trips it); the watchdog times the phase instead.
//
// Phases: kHead (from the connection's start or its previous reply until the head is read),
// kBody (until the body is read), kBusy (a handler runs or the reply is written: not timed).
// A connection past its phase's deadline gets "408" (JSON, naming header_deadline_s or
// body_deadline_s) written on its socket, which is then shut down: the I/O thread sees the
// end and frees it. Opened past max_connections: "503" with Retry-After: 1, then shut down.
// The socket is only written in kHead and kBody, while the I/O thread is reading, never
// writing, and under the table's lock, which Closed also takes before the socket is closed.
// Errors: none. Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>

#include "serve/http_options.h"

namespace tessera::serve {

struct WatchedConnection {
  enum class Phase { kHead, kBody, kBusy };
  int fd = -1;
  Phase phase = Phase::kHead;
  std::chrono::steady_clock::time_point since;
  bool refused = false;  // answered 408 or 503 by the watchdog
  bool counted = false;  // under the cap (not refused when opened)
};

class ConnectionWatchdog {
 public:
  // `count` is called (under the table's lock) with the counter name of each refusal.
  ConnectionWatchdog(const HttpOptions& options, std::function<void(const char*)> count);
  ~ConnectionWatchdog();
  ConnectionWatchdog(const ConnectionWatchdog&) = delete;
  ConnectionWatchdog& operator=(const ConnectionWatchdog&) = delete;

  void Start();
  void Stop();

  // A new connection on socket `fd`; answered 503 and refused past the cap.
  WatchedConnection* Opened(int fd);
  // Before the socket closes; `c` is deleted.
  void Closed(WatchedConnection* c);
  void SetPhase(WatchedConnection* c, WatchedConnection::Phase phase);
  bool refused(WatchedConnection* c);
  // The shell answered it itself (a refusal part-way through a body): no 408 after it.
  void MarkRefused(WatchedConnection* c);
  int open_connections() const;

 private:
  void Watch();

  const HttpOptions options_;
  std::function<void(const char*)> count_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_set<WatchedConnection*> open_;
  int counted_open_ = 0;  // not refused
  bool stop_ = false;
  std::thread thread_;
};

// Writes a whole JSON error reply with Connection: close straight on `fd` (non-blocking, no
// SIGPIPE; what does not fit the socket buffer is dropped), then shuts the socket down.
void WriteErrorAndShutdown(int fd, int status, const std::string& message,
                           const std::string& extra_headers = "");

}  // namespace tessera::serve

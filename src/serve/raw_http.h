// RawHttpConnection: one blocking TCP connection (POSIX sockets) that sends exactly the bytes
// it is given and reads one HTTP/1.1 reply. It exists for abuse testing (abuse.h): a client
// library refuses to send a malformed request line, a lying Content-Length or half a body, and
// does not let the caller close the connection at a chosen moment.
//
// Timeouts: every call is bounded by `timeout_s` (connect, each send, the whole reply read).
// A reply is read until its headers and Content-Length bytes of body have arrived, or until
// the peer closes when it gives no Content-Length; at most kMaxRawReplyBytes are kept.
//
// Errors: Unavailable when the host cannot be resolved or connected to, or the peer resets;
// DeadlineExceeded when the timeout passes; InvalidArgument from ParseHttpReply for bytes that
// are not an HTTP/1.x reply (e.g. "no status line").
// Thread-safety: one connection per thread; ParseHttpReply is reentrant.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera::serve {

inline constexpr int64_t kMaxRawReplyBytes = int64_t{64} << 20;

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// Parses a complete reply: "HTTP/1.x CODE reason", headers, blank line, body (the body is
// everything after the blank line, cut to Content-Length when that header is present).
core::StatusOr<HttpReply> ParseHttpReply(std::string_view bytes);

class RawHttpConnection {
 public:
  // Resolves `host` (IPv4) and connects within timeout_s.
  static core::StatusOr<RawHttpConnection> Open(const std::string& host, int port,
                                                double timeout_s);
  RawHttpConnection(RawHttpConnection&& other) noexcept;
  RawHttpConnection& operator=(RawHttpConnection&& other) noexcept;
  RawHttpConnection(const RawHttpConnection&) = delete;
  RawHttpConnection& operator=(const RawHttpConnection&) = delete;
  ~RawHttpConnection();

  // Sends every byte (retrying short writes); never raises SIGPIPE.
  core::Status Send(std::string_view bytes);
  // Reads one reply (see the file comment) and parses it.
  core::StatusOr<HttpReply> ReadReply();
  // Closes now (the peer sees the connection end); idempotent.
  void Close();
  bool open() const { return fd_ >= 0; }

 private:
  RawHttpConnection(int fd, double timeout_s) : fd_(fd), timeout_s_(timeout_s) {}
  int fd_ = -1;
  double timeout_s_ = 0;
};

}  // namespace tessera::serve

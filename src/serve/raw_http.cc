#include "serve/raw_http.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/parse_number.h"

namespace tessera::serve {
namespace {

using Clock = std::chrono::steady_clock;

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

// Milliseconds left until `deadline` (at least 0).
int MillisLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

Clock::time_point DeadlineIn(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Waits until `fd` is ready for `events`; DeadlineExceeded when the deadline passes first.
core::Status WaitFor(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, MillisLeft(deadline));
    if (n > 0) return core::Status::Ok();
    if (n == 0) return core::DeadlineExceeded(std::string(what) + ": timed out");
    if (errno != EINTR) return core::Unavailable(std::string(what) + ": " + std::strerror(errno));
  }
}

// The length of the reply in `buf` once its headers and Content-Length body bytes are in;
// 0 while incomplete or when the reply has no Content-Length (read until close then).
size_t CompleteLength(const std::string& buf) {
  const size_t end = buf.find("\r\n\r\n");
  if (end == std::string::npos) return 0;
  auto parsed = ParseHttpReply(std::string_view(buf).substr(0, end + 4));
  if (!parsed.ok()) return 0;
  const auto it = parsed->headers.find("content-length");
  if (it == parsed->headers.end()) return 0;
  auto n = core::ParseInteger(it->second, 0, kMaxRawReplyBytes);
  if (!n.ok()) return 0;
  const size_t total = end + 4 + static_cast<size_t>(*n);
  return buf.size() >= total ? total : 0;
}

}  // namespace

core::StatusOr<HttpReply> ParseHttpReply(std::string_view bytes) {
  const size_t line_end = bytes.find("\r\n");
  const std::string_view line = bytes.substr(0, line_end);
  if (line.rfind("HTTP/1.", 0) != 0 || line.size() < 12 || line[8] != ' ') {
    return core::InvalidArgument("reply: no HTTP/1.x status line, got '" +
                                 std::string(line.substr(0, 40)) + "'");
  }
  auto code = core::ParseInteger(std::string(line.substr(9, 3)), 100, 999);
  if (!code.ok()) {
    return core::InvalidArgument("reply: bad status code in '" + std::string(line.substr(0, 40)) +
                                 "'");
  }
  HttpReply reply;
  reply.status = static_cast<int>(*code);
  const size_t head_end = bytes.find("\r\n\r\n");
  if (line_end == std::string_view::npos || head_end == std::string_view::npos) {
    return core::InvalidArgument("reply: headers do not end with an empty line");
  }
  size_t pos = line_end + 2;
  while (pos < head_end) {
    const size_t next = bytes.find("\r\n", pos);
    const std::string_view h = bytes.substr(pos, next - pos);
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos) {
      return core::InvalidArgument("reply: header without ':': '" + std::string(h.substr(0, 40)) +
                                   "'");
    }
    reply.headers[Lower(std::string(h.substr(0, colon)))] = Trim(h.substr(colon + 1));
    pos = next + 2;
  }
  reply.body = std::string(bytes.substr(head_end + 4));
  const auto it = reply.headers.find("content-length");
  if (it != reply.headers.end()) {
    auto n = core::ParseInteger(it->second, 0, kMaxRawReplyBytes);
    if (!n.ok()) return core::InvalidArgument("reply: bad Content-Length '" + it->second + "'");
    if (reply.body.size() > static_cast<size_t>(*n)) reply.body.resize(static_cast<size_t>(*n));
  }
  return reply;
}

core::StatusOr<RawHttpConnection> RawHttpConnection::Open(const std::string& host, int port,
                                                          double timeout_s) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || found == nullptr) {
    return core::Unavailable("cannot resolve host '" + host + "'");
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(found);
    return core::Unavailable(std::string("socket: ") + std::strerror(errno) +
                             " (raise the open-file limit, ulimit -n)");
  }
  RawHttpConnection c(fd, timeout_s);
  const int rc = connect(fd, found->ai_addr, found->ai_addrlen);
  const int err = errno;
  freeaddrinfo(found);
  const std::string where = host + ":" + service;
  if (rc != 0 && err != EINPROGRESS) {
    return core::Unavailable("connect to " + where + ": " + std::strerror(err));
  }
  if (rc != 0) {
    RETURN_IF_ERROR(WaitFor(fd, POLLOUT, DeadlineIn(timeout_s), ("connect to " + where).c_str()));
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) {
      return core::Unavailable("connect to " + where + ": " + std::strerror(so_error));
    }
  }
  return c;
}

RawHttpConnection::RawHttpConnection(RawHttpConnection&& other) noexcept
    : fd_(other.fd_), timeout_s_(other.timeout_s_) {
  other.fd_ = -1;
}

RawHttpConnection& RawHttpConnection::operator=(RawHttpConnection&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    timeout_s_ = other.timeout_s_;
    other.fd_ = -1;
  }
  return *this;
}

RawHttpConnection::~RawHttpConnection() { Close(); }

void RawHttpConnection::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

core::Status RawHttpConnection::Send(std::string_view bytes) {
  if (fd_ < 0) return core::FailedPrecondition("send: the connection is closed");
  const Clock::time_point deadline = DeadlineIn(timeout_s_);
  while (!bytes.empty()) {
    const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      RETURN_IF_ERROR(WaitFor(fd_, POLLOUT, deadline, "send"));
    } else if (n < 0 && errno != EINTR) {
      return core::Unavailable(std::string("send: ") + std::strerror(errno));
    }
  }
  return core::Status::Ok();
}

core::StatusOr<HttpReply> RawHttpConnection::ReadReply() {
  if (fd_ < 0) return core::FailedPrecondition("read: the connection is closed");
  const Clock::time_point deadline = DeadlineIn(timeout_s_);
  std::string buf;
  char chunk[16384];
  for (;;) {
    const ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buf.append(chunk, static_cast<size_t>(n));
      if (static_cast<int64_t>(buf.size()) > kMaxRawReplyBytes) {
        return core::InvalidArgument("reply: more than " + std::to_string(kMaxRawReplyBytes) +
                                     " bytes");
      }
      const size_t complete = CompleteLength(buf);
      if (complete > 0) return ParseHttpReply(std::string_view(buf).substr(0, complete));
    } else if (n == 0) {
      if (buf.empty()) return core::Unavailable("read: the server closed without a reply");
      return ParseHttpReply(buf);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      RETURN_IF_ERROR(WaitFor(fd_, POLLIN, deadline, "read reply"));
    } else if (errno != EINTR) {
      return core::Unavailable(std::string("read: ") + std::strerror(errno));
    }
  }
}

}  // namespace tessera::serve

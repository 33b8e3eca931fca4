#include "serve/http_watchdog.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include "serve/reply.h"

namespace tessera::serve {
namespace {

const char* ReasonOf(int status) {
  switch (status) {
    case 408:
      return "Request Timeout";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

}  // namespace

void WriteErrorAndShutdown(int fd, int status, const std::string& message,
                           const std::string& extra_headers) {
  const std::string body = DumpReply(ErrorBody(status, message));
  const std::string bytes = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nConnection: close\r\n{}"
      "Content-Length: {}\r\n\r\n{}",
      status, ReasonOf(status), extra_headers, body.size(), body);
  [[maybe_unused]] const ssize_t n =
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_RDWR);
}

ConnectionWatchdog::ConnectionWatchdog(const HttpOptions& options,
                                       std::function<void(const char*)> count)
    : options_(options), count_(std::move(count)) {}

ConnectionWatchdog::~ConnectionWatchdog() {
  Stop();
  std::lock_guard<std::mutex> lock(mu_);
  for (WatchedConnection* c : open_) delete c;
}

void ConnectionWatchdog::Start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { Watch(); });
}

void ConnectionWatchdog::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

WatchedConnection* ConnectionWatchdog::Opened(int fd) {
  auto* c = new WatchedConnection;
  c->fd = fd;
  c->since = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  open_.insert(c);
  if (counted_open_ >= options_.max_connections) {
    c->refused = true;
    count_("max_connections");
    WriteErrorAndShutdown(fd, 503,
                          fmt::format("too many connections: max_connections = {} are open, "
                                      "retry later",
                                      options_.max_connections),
                          "Retry-After: 1\r\n");
  } else {
    c->counted = true;
    ++counted_open_;
  }
  return c;
}

void ConnectionWatchdog::Closed(WatchedConnection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_.erase(c) == 0) return;
  if (c->counted) --counted_open_;
  delete c;
}

void ConnectionWatchdog::SetPhase(WatchedConnection* c, WatchedConnection::Phase phase) {
  std::lock_guard<std::mutex> lock(mu_);
  c->phase = phase;
  c->since = std::chrono::steady_clock::now();
}

bool ConnectionWatchdog::refused(WatchedConnection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  return c->refused;
}

void ConnectionWatchdog::MarkRefused(WatchedConnection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  c->refused = true;
}

int ConnectionWatchdog::open_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counted_open_;
}

void ConnectionWatchdog::Watch() {
  using std::chrono::duration;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    const auto now = std::chrono::steady_clock::now();
    for (WatchedConnection* c : open_) {
      if (c->refused || c->phase == WatchedConnection::Phase::kBusy) continue;
      const bool head = c->phase == WatchedConnection::Phase::kHead;
      const double limit_s = head ? options_.header_deadline_s : options_.body_deadline_s;
      if (duration<double>(now - c->since).count() < limit_s) continue;
      c->refused = true;
      count_(head ? "header_deadline" : "body_deadline");
      WriteErrorAndShutdown(
          c->fd, 408,
          head ? fmt::format("request head not complete within header_deadline_s = {} s",
                             options_.header_deadline_s)
               : fmt::format("request body not complete within body_deadline_s = {} s",
                             options_.body_deadline_s));
    }
  }
}

}  // namespace tessera::serve

#include "serve/http_exchange.h"

#include <errno.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace tessera::serve {
namespace {

ssize_t ReadStream(void* cls, uint64_t /*pos*/, char* buf, size_t max) {
  return static_cast<Exchange*>(cls)->Read(buf, max);
}

void FreeStream(void* cls) { static_cast<Exchange*>(cls)->Freed(); }

}  // namespace

bool StreamWriter::Event(const core::Json& data) {
  return Write("data: " + data.dump(-1, ' ', false, core::Json::error_handler_t::replace) +
               "\n\n");
}

bool StreamWriter::Done() { return Write("data: [DONE]\n\n"); }

void Exchange::Suspend() {
  std::lock_guard<std::mutex> lock(mu_);
  suspended_ = true;
  MHD_suspend_connection(connection_);
}

void Exchange::ResumeLocked() {
  if (!suspended_ || detached_) return;
  suspended_ = false;
  MHD_resume_connection(connection_);
}

bool Exchange::PeerClosedLocked() {
  if (!suspended_ || detached_ || fd_ < 0) return false;
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

std::optional<Exchange::Ready> Exchange::TakeReady() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ready_.has_value() || taken_) {
    // Resumed with nothing to answer yet (cannot happen by design): wait again.
    if (!taken_ && !suspended_) {
      suspended_ = true;
      MHD_suspend_connection(connection_);
    }
    return std::nullopt;
  }
  taken_ = true;
  return ready_;
}

MHD_Response* Exchange::MakeStreamResponse() {
  MHD_Response* res =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, &ReadStream, this, &FreeStream);
  if (res != nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    self_ = shared_from_this();
  }
  return res;
}

void Exchange::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  detached_ = true;
  cv_.notify_all();
}

void Exchange::Answer(int status, std::string json) {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) {
    finished_ = true;
  } else if (!ready_.has_value()) {
    ready_ = Ready{false, status, std::move(json)};
  }
  ResumeLocked();
  cv_.notify_all();
}

void Exchange::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (started_) ResumeLocked();  // the reader ends the stream
  cv_.notify_all();
}

void Exchange::Abandon(int status, std::string json) {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (!started_ && !ready_.has_value()) ready_ = Ready{false, status, std::move(json)};
  ResumeLocked();
  cv_.notify_all();
}

bool Exchange::Write(std::string_view bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (gone_ || cancelled_ || detached_) return false;
    if (PeerClosedLocked()) {
      gone_ = true;
      // Let the I/O thread see the end and free the connection.
      if (started_) ResumeLocked();
      return false;
    }
    if (static_cast<int64_t>(buf_.size()) < kMaxStreamBufferBytes) break;
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
  buf_.append(bytes);
  if (!started_) {
    started_ = true;
    ready_ = Ready{true, 200, ""};
  }
  ResumeLocked();
  return true;
}

bool Exchange::open() {
  std::lock_guard<std::mutex> lock(mu_);
  if (gone_ || cancelled_ || detached_) return false;
  if (PeerClosedLocked()) {
    gone_ = true;
    if (started_) ResumeLocked();
    return false;
  }
  return true;
}

ssize_t Exchange::Read(char* buf, size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_ || gone_) return MHD_CONTENT_READER_END_WITH_ERROR;
  if (!buf_.empty()) {
    const size_t n = std::min(max, buf_.size());
    std::memcpy(buf, buf_.data(), n);
    buf_.erase(0, n);
    cv_.notify_all();
    return static_cast<ssize_t>(n);
  }
  if (finished_) return MHD_CONTENT_READER_END_OF_STREAM;
  suspended_ = true;
  MHD_suspend_connection(connection_);
  return 0;
}

void Exchange::Freed() {
  std::shared_ptr<Exchange> keep;
  std::lock_guard<std::mutex> lock(mu_);
  gone_ = true;
  cv_.notify_all();
  keep.swap(self_);  // released after the lock (the last reference may be this one)
}

}  // namespace tessera::serve

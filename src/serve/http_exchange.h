// Exchange: the hand-over of one request between the HTTP shell's I/O thread (libmicrohttpd,
// http_server.cc) and the handler pool: the I/O thread suspends the connection and queues the
// handler; the handler's reply (or the first bytes of its stream) resumes it, and the I/O
// thread queues the reply. For a streamed reply the Exchange is also the StreamWriter and
// libmicrohttpd's content reader: the reader takes what the handler wrote and suspends the
// connection when nothing is waiting, a Write resumes it.
//
// The connection is only touched while it is suspended or from the I/O thread, and never
// after Detach (the request completed: libmicrohttpd may free the connection).
// Errors: none. Thread-safety: every method may be called from any thread (the I/O-thread
// ones from the I/O thread only, as named).
#pragma once

#include <microhttpd.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "serve/stream_writer.h"

namespace tessera::serve {

class Exchange final : public StreamWriter, public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(MHD_Connection* connection, int fd) : connection_(connection), fd_(fd) {}

  struct Ready {
    bool stream = false;
    int status = 200;
    std::string json;
  };

  // I/O thread, in the access handler, before the handler is queued.
  void Suspend();
  // I/O thread, after a resume: the reply to queue (nullopt: nothing yet).
  std::optional<Ready> TakeReady();
  // I/O thread: the chunked response over this exchange (its reader and its free callback).
  MHD_Response* MakeStreamResponse();
  // I/O thread: the request completed (the connection may be freed from now on).
  void Detach();

  // The handler returned `status` and `json`: the reply, unless it streamed (then the stream
  // ends).
  void Answer(int status, std::string json);
  StreamWriter& writer() { return *this; }

  // The server stops: a stream ends (Write returns false from now on).
  void Cancel();
  // The server gives up on the handler: the client gets `json` now (unless the reply or a
  // stream started), and nothing the handler does later reaches it.
  void Abandon(int status, std::string json);

  bool Write(std::string_view bytes) override;
  bool open() override;

  // libmicrohttpd's callbacks (I/O thread).
  ssize_t Read(char* buf, size_t max);
  void Freed();

 private:
  void ResumeLocked();      // mu_ held
  bool PeerClosedLocked();  // mu_ held; only while suspended

  MHD_Connection* connection_;
  const int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool suspended_ = false;
  bool detached_ = false;
  bool cancelled_ = false;
  bool gone_ = false;  // the client went away (or the stream's response was freed)
  std::optional<Ready> ready_;
  bool taken_ = false;
  bool started_ = false;  // the stream's first bytes were written
  bool finished_ = false;
  std::string buf_;
  std::shared_ptr<Exchange> self_;  // held by the stream's response until it is freed
};

}  // namespace tessera::serve

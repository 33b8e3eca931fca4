#include "serve/http_session.h"

#include <fmt/format.h>

#include <cctype>
#include <chrono>
#include <optional>

#include "serve/beast_http.h"
#include "serve/body_decoder.h"
#include "serve/http_framing.h"
#include "serve/http_wire.h"
#include "serve/reply.h"

namespace tessera::serve::http_internal {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

}  // namespace

// The writer of a streamed reply, shared by the handler thread (Write, Finish) and the I/O
// thread (Take, SetGone).
class StreamChannel final : public StreamWriter {
 public:
  StreamChannel(std::weak_ptr<Session> session, asio::io_context& io)
      : session_(std::move(session)), io_(io) {}

  bool Write(std::string_view bytes) override {
    std::unique_lock<std::mutex> lock(mu_);
    while (!gone_ && !cancelled_ &&
           static_cast<int64_t>(pending_.size()) >= kMaxStreamBufferBytes) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (gone_ || cancelled_) return false;
    if (bytes.empty()) return true;
    pending_ += fmt::format("{:x}\r\n", bytes.size());
    pending_.append(bytes);
    pending_ += "\r\n";
    started_ = true;
    PostFlushLocked();
    return true;
  }
  bool open() override {
    std::lock_guard<std::mutex> lock(mu_);
    return !gone_ && !cancelled_;
  }
  // The handler returned: true when it streamed (the stream ends), false when it wrote
  // nothing (its Reply is the answer).
  bool Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) return false;
    finished_ = true;
    PostFlushLocked();
    return true;
  }
  // I/O thread: everything written so far; *end when the handler has finished.
  std::string Take(bool* end) {
    std::lock_guard<std::mutex> lock(mu_);
    flush_posted_ = false;
    std::string out;
    out.swap(pending_);
    *end = finished_;
    cv_.notify_all();
    return out;
  }
  void SetGone() {
    std::lock_guard<std::mutex> lock(mu_);
    gone_ = true;
    cv_.notify_all();
  }
  void Cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }

 private:
  void PostFlushLocked();

  std::weak_ptr<Session> session_;
  asio::io_context& io_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;  // chunk-coded
  bool started_ = false, finished_ = false, gone_ = false, cancelled_ = false;
  bool flush_posted_ = false;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<ShellState> state, tcp::socket socket)
      : st_(std::move(state)),
        socket_(std::move(socket)),
        buf_(static_cast<size_t>(st_->options.max_header_bytes + 16 * 1024)),
        timer_(st_->io) {}

  void ReadHead();
  void FlushStream();
  void Close();
  // Stop past the drain deadline: a request whose handler still runs is answered 503 now.
  void Abandon();
  void CancelStream() {
    if (stream_ != nullptr) stream_->Cancel();
  }

 private:
  enum class Phase { kHead, kBody, kBusy, kClosing };

  void Arm(double seconds);
  void CancelTimer() {
    ++timer_generation_;
    timer_.cancel();
  }
  void OnDeadline();
  void OnHead(const ErrorCode& ec);
  void OnBody(const ErrorCode& ec);
  void Dispatch(std::string body);
  void Refuse(int status, const std::string& message, const std::string& counter);
  void WriteReply(int status, const std::string& json, const std::string& extra_headers = "");
  void AfterReply(bool close);
  void StartWatch();
  void OnWatch(const ErrorCode& ec, size_t n);
  void ReleaseInFlight();

  std::shared_ptr<ShellState> st_;
  tcp::socket socket_;
  beast::flat_buffer buf_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  asio::steady_timer timer_;
  uint64_t timer_generation_ = 0;
  Phase phase_ = Phase::kHead;
  bool closed_ = false;
  bool keep_alive_ = true;
  const Route* route_ = nullptr;
  std::string coding_;
  bool holds_in_flight_ = false;
  bool writing_reply_ = false;
  // Streaming.
  std::shared_ptr<StreamChannel> stream_;
  bool head_sent_ = false;
  bool stream_writing_ = false;
  bool watching_ = false;
  bool after_watch_ = false;  // the stream ended while the watch read was pending
};

void StreamChannel::PostFlushLocked() {
  if (flush_posted_) return;
  flush_posted_ = true;
  asio::post(io_, [w = session_] {
    if (auto s = w.lock()) s->FlushStream();
  });
}

void Session::Arm(double seconds) {
  const uint64_t generation = ++timer_generation_;
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds)));
  timer_.async_wait([self = shared_from_this(), generation](ErrorCode ec) {
    if (!ec && generation == self->timer_generation_ && !self->closed_) self->OnDeadline();
  });
}

void Session::OnDeadline() {
  if (phase_ == Phase::kHead && buf_.size() == 0 && !parser_->got_some()) {
    // Idle: no byte of a request arrived. Closed without a reply: a keep-alive client would
    // read a 408 sent now as the reply to the request it sends next.
    st_->Count("idle_timeout");
    return Close();
  }
  if (phase_ == Phase::kHead) {
    Refuse(408,
           fmt::format("request head not complete within header_deadline_s = {} s",
                       st_->options.header_deadline_s),
           "header_deadline");
  } else if (phase_ == Phase::kBody) {
    Refuse(408,
           fmt::format("request body not complete within body_deadline_s = {} s",
                       st_->options.body_deadline_s),
           "body_deadline");
  }
}

void Session::ReadHead() {
  if (closed_) return;
  phase_ = Phase::kHead;
  route_ = nullptr;
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(st_->options.max_header_bytes));
  parser_->body_limit(static_cast<uint64_t>(st_->options.max_body_bytes));
  Arm(st_->options.header_deadline_s);
  bhttp::async_read_header(socket_, buf_, *parser_,
                           [self = shared_from_this()](ErrorCode ec, size_t) { self->OnHead(ec); });
}

void Session::OnHead(const ErrorCode& ec) {
  if (closed_ || phase_ != Phase::kHead) return;
  if (ec == asio::error::operation_aborted) return;
  if (ec) {
    if (IsClientGone(ec)) return Close();
    if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
      // The request line alone over its limit is 414, else the head is 431. (Beast parses
      // the request line first: when it has, the target is set and the fields overflowed.)
      const auto target_bytes = parser_->get().target().size();
      if (target_bytes > static_cast<size_t>(kMaxRequestLineBytes) ||
          (target_bytes == 0 && buf_.size() > static_cast<size_t>(kMaxRequestLineBytes))) {
        return Refuse(414,
                      fmt::format("request line over {} bytes (the request target is too long)",
                                  kMaxRequestLineBytes),
                      "uri_too_long");
      }
      return Refuse(431,
                    fmt::format("request head over max_header_bytes = {} bytes",
                                st_->options.max_header_bytes),
                    "max_header_bytes");
    }
    if (ec == bhttp::error::body_limit) {
      return Refuse(413,
                    fmt::format("body too large: Content-Length over max_body_bytes = {} bytes",
                                st_->options.max_body_bytes),
                    "max_body_bytes");
    }
    if (ec == bhttp::error::bad_content_length && ContentLengthsAreHugeNumbers(buf_)) {
      return Refuse(413,
                    fmt::format("body too large: Content-Length over max_body_bytes = {} bytes",
                                st_->options.max_body_bytes),
                    "max_body_bytes");
    }
    if (ec == bhttp::error::bad_content_length) {
      return Refuse(400,
                    "framing: bad Content-Length: differing Content-Length values, "
                    "Transfer-Encoding and Content-Length in one request, or not a decimal "
                    "number of bytes (RFC 9112 6.1, 6.3)",
                    "framing");
    }
    if (ec == bhttp::error::bad_transfer_encoding) {
      return Refuse(400,
                    "framing: bad Transfer-Encoding: Transfer-Encoding and Content-Length in "
                    "one request, or chunked sent twice (RFC 9112 6.1)",
                    "framing");
    }
    return Refuse(400, "malformed request: " + ec.message(), "malformed");
  }
  const auto& req = parser_->get();
  if (req.method() == bhttp::verb::unknown) {
    return Refuse(400,
                  "malformed request: method " + QuoteValue(std::string(req.method_string())) +
                      " (methods are GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH, ...; case "
                      "matters)",
                  "malformed");
  }
  RequestHead head;
  head.method = std::string(req.method_string());
  head.target = std::string(req.target());
  for (const auto& f : req) head.headers.emplace_back(std::string(f.name_string()), f.value());
  const std::string path = head.target.substr(0, head.target.find('?'));
  const auto it = st_->routes.find({head.method, path});
  route_ = it != st_->routes.end() ? &it->second : nullptr;
  if (auto refusal =
          CheckRequestHead(head, st_->options, route_ != nullptr && route_->has_body())) {
    return Refuse(refusal->status, refusal->message, refusal->counter);
  }
  if (route_ == nullptr) {
    std::string why = "no such route: " + head.method + " " + path;
    if (why.size() > 200) why = core::Utf8Prefix(why, 200) + "...";
    return Refuse(404, why, "no_route");
  }
  keep_alive_ = req.keep_alive();
  coding_.clear();
  bool expect_continue = false;
  for (const auto& [name, value] : head.headers) {
    if (HeaderNameIs(name, "content-encoding")) coding_ = value;
    if (HeaderNameIs(name, "expect")) expect_continue = true;
  }
  if (parser_->is_done()) return OnBody({});
  phase_ = Phase::kBody;
  Arm(st_->options.body_deadline_s);
  auto read_body = [self = shared_from_this()] {
    bhttp::async_read(self->socket_, self->buf_, *self->parser_,
                      [self](ErrorCode e, size_t) { self->OnBody(e); });
  };
  if (!expect_continue) return read_body();
  static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  asio::async_write(socket_, asio::buffer(kContinue),
                    [self = shared_from_this(), read_body](ErrorCode e, size_t) {
                      if (self->closed_ || self->phase_ != Phase::kBody) return;
                      if (e) return self->Close();
                      read_body();
                    });
}

void Session::OnBody(const ErrorCode& ec) {
  if (closed_ || phase_ == Phase::kClosing || phase_ == Phase::kBusy) return;
  if (ec == asio::error::operation_aborted) return;
  if (ec) {
    if (IsClientGone(ec)) return Close();
    if (ec == bhttp::error::body_limit || ec == bhttp::error::buffer_overflow) {
      return Refuse(413,
                    fmt::format("body too large: more than max_body_bytes = {} bytes",
                                st_->options.max_body_bytes),
                    "max_body_bytes");
    }
    return Refuse(400, "the body could not be read (bad chunked framing: " + ec.message() + ")",
                  "bad_body");
  }
  std::string body;
  auto decoder = BodyDecoder::For(coding_, st_->options.max_body_bytes);
  DecodeResult d = DecodeResult::kBad;
  if (decoder.ok()) {
    d = (*decoder)->Feed(parser_->get().body(), body);
    if (d == DecodeResult::kOk) d = (*decoder)->Finish();
  }
  if (d == DecodeResult::kTooLarge) {
    return Refuse(413,
                  fmt::format("body too large: more than max_body_bytes = {} bytes once decoded",
                              st_->options.max_body_bytes),
                  "max_body_bytes");
  }
  if (d == DecodeResult::kBad) {
    return Refuse(400, "the body could not be decoded (bad or cut gzip, deflate or br data)",
                  "bad_body");
  }
  Dispatch(std::move(body));
}

void Session::Dispatch(std::string body) {
  phase_ = Phase::kBusy;
  CancelTimer();
  parser_->get().body().clear();
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    if (!st_->stopping) {
      ++st_->in_flight;
      holds_in_flight_ = true;
    }
  }
  if (!holds_in_flight_) return Refuse(503, "server is stopping", "stopping");
  if (route_->stream != nullptr) {
    stream_ = std::make_shared<StreamChannel>(weak_from_this(), st_->io);
    head_sent_ = false;
  }
  auto self = shared_from_this();
  const Route* route = route_;
  std::shared_ptr<StreamChannel> stream = stream_;
  std::shared_ptr<ShellState> st = st_;
  const bool submitted = st_->pool.Submit([self, st, route, stream, body = std::move(body)] {
    Reply reply;
    try {
      if (route->stream != nullptr) {
        reply = route->stream(body, *stream);
      } else if (route->post != nullptr) {
        reply = route->post(body);
      } else {
        reply = route->get();
      }
    } catch (...) {
      reply = ErrorReply(500, "internal error");
    }
    if (stream != nullptr && stream->Finish()) return;  // the I/O thread ends the stream
    std::string json = DumpReply(reply.body);
    std::lock_guard<std::mutex> lock(st->mu);
    // After Stop gave up on this handler, a post would never run and would keep the session
    // (and the shell's state) alive in the stopped I/O context.
    if (st->io_stopped) return;
    std::string extra = reply.retry_after_s > 0
                            ? "Retry-After: " + std::to_string(reply.retry_after_s) + "\r\n"
                            : std::string();
    asio::post(st->io, [self, status = reply.status, json = std::move(json),
                        extra = std::move(extra)] { self->WriteReply(status, json, extra); });
  });
  if (!submitted) {
    ReleaseInFlight();
    Refuse(503, "server is stopping", "stopping");
  }
}

void Session::WriteReply(int status, const std::string& json, const std::string& extra_headers) {
  if (closed_) return ReleaseInFlight();
  stream_.reset();
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    stopping = st_->stopping;
  }
  const bool close = !keep_alive_ || stopping;
  auto data = std::make_shared<std::string>(
      ReplyBytes(status, "application/json", json, close, extra_headers));
  writing_reply_ = true;
  asio::async_write(socket_, asio::buffer(*data),
                    [self = shared_from_this(), data, close](ErrorCode ec, size_t) {
                      self->writing_reply_ = false;
                      self->ReleaseInFlight();
                      if (ec) return self->Close();
                      self->AfterReply(close);
                    });
}

void Session::AfterReply(bool close) {
  if (closed_) return;
  if (close) {
    // A clean end: what the client still sends is drained, so that it reads its whole reply.
    LingerAndClose(*st_, std::move(socket_));
    return Close();
  }
  ReadHead();
}

void Session::FlushStream() {
  if (closed_ || stream_ == nullptr || stream_writing_) return;
  bool end = false;
  std::string data = stream_->Take(&end);
  if (!head_sent_ && (!data.empty() || end)) {
    head_sent_ = true;
    data = fmt::format(
               "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nCache-Control: no-cache\r\n"
               "Transfer-Encoding: chunked\r\n{}\r\n",
               route_->content_type, keep_alive_ ? "" : "Connection: close\r\n") +
           data;
    StartWatch();
  }
  if (end) data += "0\r\n\r\n";
  if (data.empty()) return;
  stream_writing_ = true;
  auto bytes = std::make_shared<std::string>(std::move(data));
  asio::async_write(socket_, asio::buffer(*bytes),
                    [self = shared_from_this(), bytes, end](ErrorCode ec, size_t) {
                      self->stream_writing_ = false;
                      if (ec) {
                        if (self->stream_ != nullptr) self->stream_->SetGone();
                        return self->Close();
                      }
                      if (!end) return self->FlushStream();
                      self->stream_.reset();
                      self->ReleaseInFlight();
                      if (self->watching_) {
                        self->after_watch_ = true;
                        ErrorCode e;
                        self->socket_.cancel(e);  // OnWatch continues
                      } else {
                        self->AfterReply(!self->keep_alive_);
                      }
                    });
}

void Session::StartWatch() {
  if (watching_ || closed_ || buf_.size() + 4096 > buf_.max_size()) return;
  watching_ = true;
  socket_.async_read_some(buf_.prepare(4096), [self = shared_from_this()](ErrorCode ec, size_t n) {
    self->OnWatch(ec, n);
  });
}

void Session::OnWatch(const ErrorCode& ec, size_t n) {
  watching_ = false;
  if (closed_) return;
  if (!ec) {
    buf_.commit(n);  // pipelined bytes: read after the stream
    if (stream_ != nullptr) StartWatch();
    if (after_watch_) {
      after_watch_ = false;
      AfterReply(!keep_alive_);
    }
    return;
  }
  if (ec == asio::error::operation_aborted && after_watch_) {
    after_watch_ = false;
    return AfterReply(!keep_alive_);
  }
  // The client closed or reset its connection mid-stream.
  if (stream_ != nullptr) stream_->SetGone();
  Close();
}

void Session::Refuse(int status, const std::string& message, const std::string& counter) {
  if (closed_) return;
  st_->Count(counter);
  phase_ = Phase::kClosing;
  CancelTimer();
  ErrorCode ec;
  socket_.cancel(ec);  // a pending read ends with operation_aborted
  WriteThenLinger(*st_, std::move(socket_), ErrorBytes(status, message));
  Close();
}

void Session::ReleaseInFlight() {
  if (!holds_in_flight_) return;
  holds_in_flight_ = false;
  std::lock_guard<std::mutex> lock(st_->mu);
  --st_->in_flight;
  st_->idle_cv.notify_all();
}

void Session::Close() {
  if (closed_) return;
  closed_ = true;
  auto self = shared_from_this();
  CancelTimer();
  if (stream_ != nullptr) stream_->SetGone();
  ErrorCode ec;
  if (socket_.is_open()) {
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }
  // A handler still running keeps the session alive; its reply is dropped (WriteReply).
  if (stream_ != nullptr) ReleaseInFlight();
  st_->sessions.erase(self);
  std::lock_guard<std::mutex> lock(st_->mu);
  --st_->open_connections;
}

void StartSession(const std::shared_ptr<ShellState>& state, tcp::socket socket) {
  ErrorCode ec;
  socket.set_option(tcp::no_delay(true), ec);  // a streamed event leaves at once
  auto s = std::make_shared<Session>(state, std::move(socket));
  state->sessions.insert(s);
  s->ReadHead();
}

void RefuseConnection(const std::shared_ptr<ShellState>& state, tcp::socket socket) {
  state->Count("max_connections");
  WriteThenLinger(*state, std::move(socket),
                  ErrorBytes(503,
                             fmt::format("too many connections: max_connections = {} are open, "
                                         "retry later",
                                         state->options.max_connections),
                             "Retry-After: 1\r\n"));
}

void Session::Abandon() {
  if (!closed_ && phase_ == Phase::kBusy && stream_ == nullptr && !writing_reply_) {
    // A small reply on an idle socket: written at once (the I/O loop is about to stop).
    ErrorCode ec;
    asio::write(socket_,
                asio::buffer(
                    ErrorBytes(503, fmt::format("server stopped: the request did not finish within "
                                                "drain_deadline_s = {} s",
                                                st_->options.drain_deadline_s))),
                ec);
  }
  Close();
}

void CloseAllSessions(ShellState& state) {
  const std::set<std::shared_ptr<Session>> sessions = state.sessions;
  for (const auto& s : sessions) s->Abandon();
  CloseAllLingering(state);
}

void CancelAllStreams(ShellState& state) {
  for (const auto& s : state.sessions) s->CancelStream();
}

}  // namespace tessera::serve::http_internal

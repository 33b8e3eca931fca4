#include "serve/http_wire.h"

#include <fmt/format.h>

#include <cctype>
#include <chrono>

#include "serve/beast_http.h"
#include "serve/reply.h"

namespace tessera::serve::http_internal {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

constexpr int64_t kLingerBytes = int64_t{1} << 20;
constexpr double kLingerS = 2;

std::string ReplyBytes(int status, const std::string& content_type, const std::string& body,
                       bool close, const std::string& extra_headers) {
  const auto reason = bhttp::obsolete_reason(bhttp::int_to_status(static_cast<unsigned>(status)));
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}{}\r\n{}",
                     status, std::string_view(reason.data(), reason.size()), content_type,
                     body.size(), close ? "Connection: close\r\n" : "", extra_headers, body);
}

std::string ErrorBytes(int status, const std::string& message, const std::string& extra_headers) {
  return ReplyBytes(status, "application/json", DumpReply(ErrorBody(status, message)), true,
                    extra_headers);
}

// Keeps reading (and dropping) what the client still sends after a refusal, at most
// kLingerBytes or kLingerS, then closes: closing with unread bytes would reset the connection
// and the client could lose the refusal.
struct Linger : std::enable_shared_from_this<Linger> {  // declared in http_session.h
  Linger(ShellState& st, tcp::socket s)
      : state(st), socket(std::move(s)), timer(socket.get_executor()) {}
  ShellState& state;
  tcp::socket socket;
  asio::steady_timer timer;
  char buf[8192];
  int64_t dropped = 0;

  void Start() {
    state.lingering.insert(shared_from_this());
    ErrorCode ec;
    socket.shutdown(tcp::socket::shutdown_send, ec);
    timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(kLingerS)));
    timer.async_wait([self = shared_from_this()](ErrorCode e) {
      if (!e) self->Close();
    });
    Read();
  }
  void Read() {
    socket.async_read_some(asio::buffer(buf), [self = shared_from_this()](ErrorCode e, size_t n) {
      self->dropped += static_cast<int64_t>(n);
      if (e || self->dropped > kLingerBytes) {
        self->Close();
      } else {
        self->Read();
      }
    });
  }
  void Close() {
    ErrorCode ec;
    timer.cancel();
    socket.close(ec);
    state.lingering.erase(shared_from_this());
  }
};

void LingerAndClose(ShellState& st, tcp::socket socket) {
  std::make_shared<Linger>(st, std::move(socket))->Start();
}

void WriteThenLinger(ShellState& st, tcp::socket socket, std::string bytes) {
  auto linger = std::make_shared<Linger>(st, std::move(socket));
  st.lingering.insert(linger);
  auto data = std::make_shared<std::string>(std::move(bytes));
  asio::async_write(linger->socket, asio::buffer(*data), [linger, data](ErrorCode ec, size_t) {
    if (ec) {
      linger->Close();
    } else {
      linger->Start();
    }
  });
}

void CloseAllLingering(ShellState& st) {
  const std::set<std::shared_ptr<Linger>> lingering = st.lingering;
  for (const auto& l : lingering) l->Close();
}

bool ContentLengthsAreHugeNumbers(const boost::beast::flat_buffer& buf) {
  // (Beast has consumed the fields before the failing one: the line starts the buffer.)
  std::string head = "\n" + std::string(static_cast<const char*>(buf.data().data()), buf.size());
  head = head.substr(0, head.find("\r\n\r\n"));
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool any = false;
  for (size_t p = head.find("\ncontent-length:"); p != std::string::npos;
       p = head.find("\ncontent-length:", p + 1)) {
    size_t v = p + 16;
    while (v < head.size() && (head[v] == ' ' || head[v] == '\t')) ++v;
    size_t e = v;
    while (e < head.size() && std::isdigit(static_cast<unsigned char>(head[e]))) ++e;
    size_t rest = e;
    while (rest < head.size() && (head[rest] == ' ' || head[rest] == '\t')) ++rest;
    if (e == v || e - v < 20 || (rest < head.size() && head[rest] != '\r')) return false;
    any = true;
  }
  return any;
}

bool IsClientGone(const ErrorCode& ec) {
  return ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
         ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::connection_aborted;
}

}  // namespace tessera::serve::http_internal

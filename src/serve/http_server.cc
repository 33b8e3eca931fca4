#include "serve/http_server.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <boost/asio.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "serve/http_session.h"

namespace tessera::serve {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using http_internal::Route;
using http_internal::ShellState;

struct HttpServer::Impl {
  explicit Impl(const HttpOptions& o)
      : state(std::make_shared<ShellState>(o)), acceptor(state->io), retry(state->io) {}

  std::shared_ptr<ShellState> state;
  tcp::acceptor acceptor;
  asio::steady_timer retry;  // after an accept error (out of file descriptors)
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread io_thread;
  std::promise<void> io_done;  // set when the I/O thread returns
  std::mutex stop_mu;          // serialises StopAccepting and Stop
  bool accepting_stopped = false;
  std::chrono::steady_clock::time_point stop_started;  // when accepting stopped
  bool stopped = false;

  void Accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) {
        // Out of file descriptors (or the like): try again shortly rather than spin.
        retry.expires_after(std::chrono::milliseconds(50));
        retry.async_wait([this](boost::system::error_code e) {
          if (!e) Accept();
        });
        return;
      }
      bool over;
      {
        std::lock_guard<std::mutex> lock(state->mu);
        over = state->open_connections >= state->options.max_connections;
        if (!over) ++state->open_connections;
      }
      if (over) {
        http_internal::RefuseConnection(state, std::move(socket));
      } else {
        http_internal::StartSession(state, std::move(socket));
      }
      Accept();
    });
  }

  // Runs `f` on the I/O thread and waits for it (directly when no I/O thread runs).
  void OnIoThread(const std::function<void()>& f) {
    if (!io_thread.joinable()) return f();
    std::promise<void> done;
    asio::post(state->io, [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }
};

namespace {

// Raises the soft limit on open files to the hard limit: every connection holds one.
void RaiseOpenFileLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

HttpServer::HttpServer(const HttpOptions& options)
    : options_(options), impl_(std::make_unique<Impl>(options)) {}

HttpServer::~HttpServer() { Stop(); }

core::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Bind(const HttpOptions& options) {
  RETURN_IF_ERROR(ValidateHttpOptions(options));
  RETURN_IF_ERROR(ApplyHeapOptions(options.heap));
  RaiseOpenFileLimit();
  std::unique_ptr<HttpServer> s(new HttpServer(options));
  boost::system::error_code ec;
  const auto address =
      asio::ip::make_address_v4(options.host == "localhost" ? "127.0.0.1" : options.host, ec);
  if (ec) {
    return core::InvalidArgument(
        fmt::format("http: host = '{}', must be an IPv4 address (e.g. 127.0.0.1)", options.host));
  }
  tcp::acceptor& a = s->impl_->acceptor;
  const tcp::endpoint endpoint(address, static_cast<uint16_t>(options.port));
  if (!a.open(endpoint.protocol(), ec) && !a.set_option(tcp::acceptor::reuse_address(true), ec) &&
      !a.bind(endpoint, ec) && !a.listen(SOMAXCONN, ec)) {
    s->port_ = a.local_endpoint(ec).port();
    return s;
  }
  return core::Unavailable(
      fmt::format("cannot listen on {}:{}: {}", options.host, options.port, ec.message()));
}

void HttpServer::Post(const std::string& path, PostHandler handler) {
  impl_->state->routes[{"POST", path}] = Route{std::move(handler), nullptr, nullptr, ""};
}

void HttpServer::Get(const std::string& path, GetHandler handler) {
  impl_->state->routes[{"GET", path}] = Route{nullptr, std::move(handler), nullptr, ""};
}

void HttpServer::PostStream(const std::string& path, StreamHandler handler,
                            const std::string& content_type) {
  impl_->state->routes[{"POST", path}] = Route{nullptr, nullptr, std::move(handler), content_type};
}

void HttpServer::Listen() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.stop_mu);
  if (m.io_thread.joinable() || m.accepting_stopped) return;
  m.work.emplace(m.state->io.get_executor());
  m.Accept();
  m.io_thread = std::thread([&m] {
    m.state->io.run();
    m.io_done.set_value();
  });
}

void HttpServer::StopAccepting() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.stop_mu);
  if (m.accepting_stopped) return;
  m.accepting_stopped = true;
  m.stop_started = std::chrono::steady_clock::now();
  m.OnIoThread([&m] {
    boost::system::error_code ec;
    m.acceptor.close(ec);
    m.retry.cancel();
  });
}

void HttpServer::Stop() {
  StopAccepting();
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.stop_mu);
  if (m.stopped) return;
  m.stopped = true;
  ShellState& st = *m.state;
  {
    std::lock_guard<std::mutex> state_lock(st.mu);
    st.stopping = true;  // requests read from now on are answered 503
  }
  // Streams end at once (their handlers see Write fail); other handlers have the drain
  // deadline to answer.
  m.OnIoThread([&st] { http_internal::CancelAllStreams(st); });
  {
    std::unique_lock<std::mutex> state_lock(st.mu);
    // The drain deadline counts from StopAccepting (Server::Stop drains its jobs in between).
    st.idle_cv.wait_until(
        state_lock,
        m.stop_started + std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::duration<double>(options_.drain_deadline_s)),
        [&st] { return st.in_flight == 0; });
  }
  m.OnIoThread([&st] {
    http_internal::CloseAllSessions(st);
    std::lock_guard<std::mutex> state_lock(st.mu);
    st.io_stopped = true;
  });
  if (m.io_thread.joinable()) {
    // Every socket is closed: the I/O thread runs out of work and returns; should anything
    // still be pending after a while, it is stopped (Stop always returns).
    m.work.reset();
    if (m.io_done.get_future().wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
      st.io.stop();
    }
    m.io_thread.join();
  }
  st.pool.Stop(0.1);  // a handler still running is left to end on its own
}

core::Json HttpServer::Counters() const {
  ShellState& st = *impl_->state;
  std::lock_guard<std::mutex> lock(st.mu);
  core::Json refused = core::Json::object();
  for (const auto& [name, n] : st.counters) refused[name] = n;
  return {{"open_connections", st.open_connections},
          {"handler_threads", st.pool.threads()},
          {"refused", refused},
          {"heap", HeapStats()}};
}

std::string HttpServer::url() const { return fmt::format("http://{}:{}", options_.host, port_); }

}  // namespace tessera::serve

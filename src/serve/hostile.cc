#include "serve/hostile.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "core/elapsed.h"
#include "core/memory_info.h"
#include "serve/http_url.h"
#include "serve/raw_http.h"

namespace tessera::serve {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct Target {
  std::string host;
  int port = 0;
};

int ConnectRaw(const Target& t) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(t.port));
  inet_pton(AF_INET, t.host == "localhost" ? "127.0.0.1" : t.host.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One exchange on a fresh connection: the status (-1 when none), the seconds it took and the
// body's bytes.
struct Exchanged {
  int status = -1;
  double seconds = 0;
  int64_t body_bytes = 0;
};

Exchanged ExchangeOnce(const Target& t, const std::string& bytes, double timeout_s) {
  const SteadyClock::time_point t0 = SteadyClock::now();
  Exchanged e;
  auto c = RawHttpConnection::Open(t.host, t.port, timeout_s);
  if (!c.ok()) return e;
  if (!c->Send(bytes).ok()) return e;
  auto r = c->ReadReply();
  e.seconds = core::SecondsSince(t0);
  if (r.ok()) {
    e.status = r->status;
    e.body_bytes = static_cast<int64_t>(r->body.size());
  }
  return e;
}

// Reads until the peer closes or timeout_s; returns the bytes.
std::string ReadAll(int fd, double timeout_s) {
  std::string out;
  const SteadyClock::time_point t0 = SteadyClock::now();
  char buf[16384];
  while (core::SecondsSince(t0) < timeout_s) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int StatusOfBytes(const std::string& bytes) {
  if (bytes.size() < 12 || bytes.compare(0, 5, "HTTP/") != 0) return -1;
  return std::atoi(bytes.c_str() + 9);
}

std::string Get(const Target& t, const std::string& path, bool close = true) {
  return fmt::format("GET {} HTTP/1.1\r\nHost: {}:{}\r\n{}\r\n", path, t.host, t.port,
                     close ? "Connection: close\r\n" : "");
}

std::string PostBytes(const Target& t, const std::string& path, const std::string& body,
                      const std::string& extra = "") {
  return fmt::format(
      "POST {} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\nContent-Type: application/json\r\n"
      "{}Content-Length: {}\r\n\r\n{}",
      path, t.host, t.port, extra, body.size(), body);
}

double Median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int OpenFds(int pid) {
  if (pid < 0) return -1;
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return ec ? -1 : n;
}

int64_t Rss(int pid) {
  if (pid < 0) return -1;
  auto r = core::ResidentBytes(pid);
  return r.ok() ? *r : -1;
}

// Sockets that each send one byte of `trickle` (cycled) every interval_s, after `at_connect`;
// a socket the server answers or closes is counted and replaced. Runs until `stop`.
struct TrickleResult {
  std::map<int, int64_t> replies;  // status (-1: closed without a reply) -> count
  int64_t reconnects = 0;
  int64_t connect_failures = 0;
};

TrickleResult Trickle(const Target& t, int n, double interval_s, const std::string& at_connect,
                      const std::string& trickle, const std::atomic<bool>& stop) {
  TrickleResult r;
  struct Sock {
    int fd = -1;
    size_t pos = 0;
    std::string got;
  };
  std::vector<Sock> socks(static_cast<size_t>(n));
  auto open = [&](Sock& s) {
    s = Sock{};
    s.fd = ConnectRaw(t);
    if (s.fd < 0) {
      ++r.connect_failures;
      return;
    }
    if (!at_connect.empty()) ::send(s.fd, at_connect.data(), at_connect.size(), MSG_NOSIGNAL);
  };
  auto ended = [&](Sock& s) {
    ++r.replies[StatusOfBytes(s.got)];
    ::close(s.fd);
    s.fd = -1;
    ++r.reconnects;
  };
  for (Sock& s : socks) open(s);
  SteadyClock::time_point next = SteadyClock::now();
  while (!stop) {
    if (SteadyClock::now() >= next) {
      next += std::chrono::duration_cast<SteadyClock::duration>(
          std::chrono::duration<double>(interval_s));
      for (Sock& s : socks) {
        if (s.fd < 0) open(s);
        if (s.fd < 0 || trickle.empty()) continue;
        const char c = trickle[s.pos++ % trickle.size()];
        if (::send(s.fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) ended(s);
      }
    }
    std::vector<pollfd> fds;
    for (const Sock& s : socks) fds.push_back({s.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t i = 0; i < socks.size(); ++i) {
      if (socks[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[4096];
      const ssize_t got = ::recv(socks[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (got > 0) {
        if (socks[i].got.size() < 64) socks[i].got.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EAGAIN) {
        ended(socks[i]);
      }
    }
  }
  for (Sock& s : socks) {
    if (s.fd >= 0) ::close(s.fd);
  }
  return r;
}

// Milliseconds, or "no 200 within the timeout" for the sentinel of a failed probe.
std::string Ms(double seconds) {
  return seconds >= 1e9 ? std::string("no 200 within the timeout")
                        : fmt::format("{:.1f} ms", 1e3 * seconds);
}

std::string RepliesText(const std::map<int, int64_t>& replies) {
  std::string out;
  for (const auto& [status, n] : replies) {
    out += fmt::format("{}{} x{}", out.empty() ? "" : ", ",
                       status < 0 ? "closed" : std::to_string(status), n);
  }
  return out.empty() ? "none" : out;
}

class Runner {
 public:
  Runner(const HostileOptions& o, Target t) : o_(o), t_(std::move(t)) {}

  double Healthz() {
    const Exchanged e = ExchangeOnce(t_, Get(t_, "/healthz"), o_.timeout_s);
    return e.status == 200 ? e.seconds : 1e9;
  }
  Exchanged Valid(const std::string& extra = "") {
    return ExchangeOnce(t_, PostBytes(t_, o_.valid_path, o_.valid_body, extra), o_.timeout_s);
  }

  // Runs `attack` (on a thread, told to stop after seconds) while probing /healthz every
  // second and the valid request `valid_probes` times.
  void UnderAttack(HostileCase& c, double seconds, int valid_probes,
                   const std::function<void(const std::atomic<bool>&)>& attack) {
    std::atomic<bool> stop{false};
    std::thread a([&] { attack(stop); });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // connections up
    const SteadyClock::time_point t0 = SteadyClock::now();
    std::vector<double> health, valid;
    while (core::SecondsSince(t0) < seconds) {
      health.push_back(Healthz());
      if (static_cast<int>(valid.size()) < valid_probes &&
          core::SecondsSince(t0) >
              seconds * (1 + static_cast<double>(valid.size())) / (valid_probes + 1)) {
        const Exchanged e = Valid();
        valid.push_back(e.status == 200 ? e.seconds : 1e9);
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    stop = true;
    a.join();
    c.healthz_max_s = health.empty() ? -1 : *std::max_element(health.begin(), health.end());
    c.valid_s = Median(valid);
  }

  void Sample(HostileCase& c, bool before) {
    (before ? c.rss_before : c.rss_after) = Rss(o_.server_pid);
    (before ? c.fds_before : c.fds_after) = OpenFds(o_.server_pid);
  }

  const HostileOptions& o_;
  const Target t_;
  double idle_valid_s = 0;
};

std::string SlowHead(const Target& t, const std::string& path) {
  return fmt::format("POST {} HTTP/1.1\r\nHost: {}:{}\r\nX-Slow: {}", path, t.host, t.port,
                     std::string(1 << 16, 'a'));
}

void RunCase(Runner& r, const std::string& name, HostileCase& c) {
  const HostileOptions& o = r.o_;
  const Target& t = r.t_;
  if (name == "slow_headers" || name == "slow_body" || name == "idle") {
    const bool body = name == "slow_body";
    const int n = name == "idle" ? o.idle_sockets
                  : body         ? std::max(1, o.slow_sockets / 4)
                                 : o.slow_sockets;
    const double seconds = name == "idle" ? o.idle_seconds
                           : body         ? o.slow_seconds / 4
                                          : o.slow_seconds;
    TrickleResult tr;
    const std::string at_connect =
        body ? fmt::format("POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Length: {}\r\n\r\n",
                           o.valid_path, t.host, t.port, std::min<int64_t>(1000, o.max_body_bytes))
             : "";
    const std::string trickle = name == "idle" ? "" : body ? "{" : SlowHead(t, o.valid_path);
    r.UnderAttack(c, seconds, name == "slow_headers" ? 3 : 0, [&](const std::atomic<bool>& stop) {
      tr = Trickle(t, n, name == "idle" ? 0.5 : o.slow_interval_s, at_connect, trickle, stop);
    });
    c.outcome = fmt::format("{} sockets for {:.0f} s: the server answered {}; /healthz max {}", n,
                            seconds, RepliesText(tr.replies), Ms(c.healthz_max_s));
    c.pass = c.healthz_max_s >= 0 && c.healthz_max_s <= 0.1;
    if (name == "slow_headers") {
      c.outcome +=
          fmt::format("; valid request median {} (idle {})", Ms(c.valid_s), Ms(r.idle_valid_s));
      c.pass = c.pass && c.valid_s >= 0 && c.valid_s <= 2 * r.idle_valid_s;
    }
    if (tr.connect_failures > 0) {
      c.outcome += fmt::format("; {} connects failed", tr.connect_failures);
    }
  } else if (name == "header_flood") {
    std::vector<std::string> results(static_cast<size_t>(o.flood_connections) + 1);
    std::vector<std::thread> threads;
    std::atomic<bool> any_200{false};
    for (int i = 0; i <= o.flood_connections; ++i) {
      threads.emplace_back([&, i] {
        const int fd = ConnectRaw(t);
        if (fd < 0) return;
        // The last one: a single header line that never ends.
        const bool line = i == o.flood_connections;
        std::string head = Get(t, "/healthz", false);
        head.resize(head.size() - 2);  // open the head again
        head += line ? "X-Line: " : "";
        ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
        const std::string unit = line
                                     ? std::string(65536, 'a')
                                     : fmt::format("X-Flood-{}: {}\r\n", i, std::string(1000, 'b'));
        int64_t sent = 0;
        while (sent < o.flood_bytes) {
          const ssize_t n = ::send(fd, unit.data(), unit.size(), MSG_NOSIGNAL);
          if (n <= 0) break;
          sent += n;
        }
        const int status = StatusOfBytes(ReadAll(fd, 10));
        ::close(fd);
        if (status == 200) any_200 = true;
        results[static_cast<size_t>(i)] =
            fmt::format("{} (client pushed {} KiB)", status < 0 ? "closed" : std::to_string(status),
                        sent / 1024);
      });
    }
    for (std::thread& th : threads) th.join();
    std::string all;
    for (const std::string& s : results) all += (all.empty() ? "" : "; ") + s;
    c.outcome = "refused: " + all;
    c.pass = !any_200;
  } else if (name == "range") {
    std::string ranges = "bytes=0-";
    while (ranges.size() < 8000) ranges += ",0-";
    const Exchanged plain = r.Valid();
    const Exchanged ranged = r.Valid("Range: " + ranges + "\r\n");
    c.outcome = fmt::format("plain {} ({} body bytes), with Range {} ({} body bytes)", plain.status,
                            plain.body_bytes, ranged.status, ranged.body_bytes);
    c.pass = ranged.status == 200 && ranged.body_bytes <= plain.body_bytes * 3 / 2 + 1024;
  } else if (name == "pipelining") {
    std::string ten;
    for (int i = 0; i < 10; ++i) ten += Get(t, "/healthz", i == 9);
    const int fd = ConnectRaw(t);
    ::send(fd, ten.data(), ten.size(), MSG_NOSIGNAL);
    const std::string got = ReadAll(fd, o.timeout_s);
    ::close(fd);
    int replies = 0, ok = 0;
    for (size_t p = got.find("HTTP/1.1 "); p != std::string::npos;
         p = got.find("HTTP/1.1 ", p + 1)) {
      ++replies;
      ok += got.compare(p + 9, 3, "200") == 0;
    }
    c.outcome = fmt::format("10 requests in one write: {} replies, {} of them 200", replies, ok);
    c.pass = replies == 10 && ok == 10;
  } else if (name == "half_close") {
    const int fd = ConnectRaw(t);
    const std::string req = PostBytes(t, o.valid_path, o.valid_body);
    ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    const int status = StatusOfBytes(ReadAll(fd, o.timeout_s));
    ::close(fd);
    c.outcome = fmt::format("request, then shutdown(SHUT_WR): {}",
                            status < 0 ? "no reply" : std::to_string(status));
    c.pass = status == 200;
  } else if (name == "framing") {
    const std::string body = o.valid_body;
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"TE+CL", fmt::format("POST {} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                              "Content-Length: {}\r\n\r\n{:x}\r\n{}\r\n0\r\n\r\n",
                              o.valid_path, body.size(), body.size(), body)},
        {"two CL", fmt::format("POST {} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n"
                               "Content-Length: {}\r\n\r\n{}",
                               o.valid_path, body.size(), body.size() + 1, body)},
        {"no colon", fmt::format("POST {} HTTP/1.1\r\nHost: x\r\nno colon\r\n"
                                 "Content-Length: {}\r\n\r\n{}",
                                 o.valid_path, body.size(), body)}};
    c.pass = true;
    for (const auto& [what, bytes] : cases) {
      const Exchanged e = ExchangeOnce(t, bytes, o.timeout_s);
      c.outcome += fmt::format("{}{}: {}", c.outcome.empty() ? "" : ", ", what, e.status);
      c.pass = c.pass && e.status == 400;
    }
    std::string chunked = fmt::format(
        "POST {} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", o.valid_path);
    for (int64_t sent = 0; sent <= o.max_body_bytes; sent += 4096) {
      chunked += "1000\r\n" + std::string(4096, ' ') + "\r\n";
    }
    chunked += "0\r\n\r\n" + Get(t, "/healthz");
    const int fd = ConnectRaw(t);
    ::send(fd, chunked.data(), chunked.size(), MSG_NOSIGNAL);
    const std::string got = ReadAll(fd, o.timeout_s);
    ::close(fd);
    int replies = 0;
    for (size_t p = got.find("HTTP/1.1 "); p != std::string::npos;
         p = got.find("HTTP/1.1 ", p + 1)) {
      ++replies;
    }
    c.outcome +=
        fmt::format(", chunked over the limit: {} ({} replies)", StatusOfBytes(got), replies);
    c.pass = c.pass && StatusOfBytes(got) == 413 && replies == 1;
  } else if (name == "mid_body") {
    for (int i = 0; i < 50; ++i) {
      const int fd = ConnectRaw(t);
      const std::string req = PostBytes(t, o.valid_path, o.valid_body);
      ::send(fd, req.data(), req.size() - o.valid_body.size() / 2, MSG_NOSIGNAL);
      ::close(fd);
    }
    const double h = r.Healthz();
    c.outcome = fmt::format("50 clients left mid-body; /healthz then {}", Ms(h));
    c.pass = h < 1e9;
  }
}

void RunShutdown(Runner& r, HostileCase& c) {
  const HostileOptions& o = r.o_;
  std::atomic<bool> stop{false};
  TrickleResult tr;
  std::thread trickle([&] { tr = Trickle(r.t_, 20, 1, "", SlowHead(r.t_, o.valid_path), stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the trickle is under way
  // Eight valid requests at once: one runs, the rest wait in the queue when SIGTERM comes.
  constexpr int kInFlight = 8;
  std::vector<Exchanged> valid(kInFlight);
  std::vector<std::thread> requests;
  for (int i = 0; i < kInFlight; ++i) {
    requests.emplace_back([&, i] { valid[static_cast<size_t>(i)] = r.Valid(); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const SteadyClock::time_point t0 = SteadyClock::now();
  ::kill(o.server_pid, SIGTERM);
  double exited_s = -1;
  while (core::SecondsSince(t0) < o.drain_deadline_s + 30) {
    std::ifstream stat("/proc/" + std::to_string(o.server_pid) + "/stat");
    std::string pid, comm, state;
    if (!(stat >> pid >> comm >> state) || state == "Z") {
      exited_s = core::SecondsSince(t0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::thread& t : requests) t.join();
  stop = true;
  trickle.join();
  std::map<int, int64_t> got;
  for (const Exchanged& e : valid) ++got[e.status];
  c.outcome = fmt::format(
      "SIGTERM with 20 trickling sockets and {} requests sent 5 ms before: they got {}; the "
      "process {}",
      kInFlight, RepliesText(got),
      exited_s < 0 ? "had not exited" : fmt::format("exited after {:.2f} s", exited_s));
  // Each request the server had read is answered 200; one it had not read may find the
  // listener closed (no reply) or be refused 503, never cut off.
  int64_t answered = got[200], refused = got[503] + got[-1];
  c.pass = answered + refused == kInFlight && answered >= 1 && exited_s >= 0 &&
           exited_s <= o.drain_deadline_s + 1;
}

}  // namespace

core::StatusOr<HostileReport> RunHostile(const HostileOptions& o) {
  Target t;
  RETURN_IF_ERROR(ParseHttpUrl(o.url, &t.host, &t.port));
  if (o.valid_path.empty()) return core::InvalidArgument("hostile: valid_path is empty");
  if (o.slow_sockets < 1 || o.idle_sockets < 1 || o.flood_connections < 1) {
    return core::InvalidArgument(
        "hostile: slow_sockets, idle_sockets and flood_connections "
        "must be >= 1");
  }
  if (o.shutdown && o.server_pid <= 1) {
    return core::InvalidArgument(fmt::format(
        "server-pid: got {}, the shutdown case needs the server's process id (> 1)", o.server_pid));
  }
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  Runner r(o, t);
  HostileReport rep;
  if (r.Healthz() >= 1e9) {
    return core::Unavailable("hostile: " + o.url + " does not answer GET /healthz 200");
  }
  std::vector<double> h, v;
  for (int i = 0; i < 5; ++i) h.push_back(r.Healthz());
  for (int i = 0; i < 3; ++i) {
    const Exchanged e = r.Valid();
    if (e.status != 200) {
      return core::InvalidArgument(
          fmt::format("hostile: the valid request got {}, not 200", e.status));
    }
    v.push_back(e.seconds);
  }
  rep.idle_healthz_s = Median(h);
  rep.idle_valid_s = r.idle_valid_s = Median(v);
  rep.rss_start = rep.rss_peak = Rss(o.server_pid);
  std::atomic<bool> sampling{true};
  std::thread sampler([&] {
    while (sampling) {
      rep.rss_peak = std::max(rep.rss_peak, Rss(o.server_pid));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const std::vector<std::string> all = {"slow_headers", "slow_body", "idle",
                                        "header_flood", "range",     "pipelining",
                                        "half_close",   "framing",   "mid_body"};
  for (const std::string& name : all) {
    if (!o.cases.empty() && std::find(o.cases.begin(), o.cases.end(), name) == o.cases.end()) {
      continue;
    }
    HostileCase c;
    c.name = name;
    r.Sample(c, true);
    const SteadyClock::time_point t0 = SteadyClock::now();
    RunCase(r, name, c);
    c.wall_s = core::SecondsSince(t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // lingering closes end
    r.Sample(c, false);
    if (!c.pass) rep.failures.push_back(c.name + ": " + c.outcome);
    rep.cases.push_back(c);
  }
  rep.rss_end = Rss(o.server_pid);
  if (o.shutdown) {
    HostileCase c;
    c.name = "shutdown";
    r.Sample(c, true);
    const SteadyClock::time_point t0 = SteadyClock::now();
    RunShutdown(r, c);
    c.wall_s = core::SecondsSince(t0);
    if (!c.pass) rep.failures.push_back(c.name + ": " + c.outcome);
    rep.cases.push_back(c);
  }
  sampling = false;
  sampler.join();
  if (rep.rss_start > 0) {
    if (rep.rss_peak - rep.rss_start > (int64_t{64} << 20)) {
      rep.failures.push_back(fmt::format("RSS peak {} bytes above the start (at most 64 MiB)",
                                         rep.rss_peak - rep.rss_start));
    }
    if (rep.rss_end - rep.rss_start > (int64_t{16} << 20)) {
      rep.failures.push_back(fmt::format("RSS at the end {} bytes above the start (at most 16 MiB)",
                                         rep.rss_end - rep.rss_start));
    }
  }
  rep.pass = rep.failures.empty();
  return rep;
}

core::Json ToJson(const HostileReport& rep, const HostileOptions& o) {
  core::Json cases = core::Json::array();
  for (const HostileCase& c : rep.cases) {
    cases.push_back({{"name", c.name},
                     {"outcome", c.outcome},
                     {"pass", c.pass},
                     {"rss_before_bytes", c.rss_before},
                     {"rss_after_bytes", c.rss_after},
                     {"fds_before", c.fds_before},
                     {"fds_after", c.fds_after},
                     {"healthz_max_s", c.healthz_max_s},
                     {"valid_s", c.valid_s},
                     {"wall_s", c.wall_s}});
  }
  return {{"format", "tessera.serve.hostile/1"},
          {"label", "measured"},
          {"options",
           {{"url", o.url},
            {"slow_sockets", o.slow_sockets},
            {"slow_seconds", o.slow_seconds},
            {"slow_interval_s", o.slow_interval_s},
            {"idle_sockets", o.idle_sockets},
            {"idle_seconds", o.idle_seconds},
            {"flood_connections", o.flood_connections},
            {"flood_bytes", o.flood_bytes},
            {"shutdown", o.shutdown}}},
          {"idle_valid_s", rep.idle_valid_s},
          {"idle_healthz_s", rep.idle_healthz_s},
          {"rss_start_bytes", rep.rss_start},
          {"rss_peak_bytes", rep.rss_peak},
          {"rss_end_bytes", rep.rss_end},
          {"cases", cases},
          {"pass", rep.pass},
          {"failures", rep.failures}};
}

}  // namespace tessera::serve

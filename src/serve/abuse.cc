#include "serve/abuse.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include "core/elapsed.h"
#include "core/memory_info.h"
#include "serve/http_url.h"
#include "serve/raw_http.h"

namespace tessera::serve {
namespace {

using Clock = std::chrono::steady_clock;

// Printable ASCII of `bytes`, others as \xNN, cut to `most` characters (a report line must be
// one line of valid UTF-8 whatever the server or the case sent).
std::string Printable(std::string_view bytes, size_t most) {
  std::string s;
  for (unsigned char c : bytes) {
    if (s.size() >= most) return s + "...";
    if (c >= 0x20 && c < 0x7f) {
      s += static_cast<char>(c);
    } else {
      s += fmt::format("\\x{:02x}", c);
    }
  }
  return s;
}

std::string FirstLine(const std::string& request) {
  return Printable(std::string_view(request).substr(0, request.find("\r\n")), 80);
}

core::StatusOr<HttpReply> Get(const std::string& host, int port, const std::string& path,
                              double timeout_s) {
  ASSIGN_OR_RETURN(RawHttpConnection c, RawHttpConnection::Open(host, port, timeout_s));
  RETURN_IF_ERROR(c.Send("GET " + path + " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) +
                         "\r\nConnection: close\r\n\r\n"));
  return c.ReadReply();
}

// What the run shares between its threads.
struct Run {
  std::string host;
  int port = 0;
  const AbuseOptions* options = nullptr;
  const AbuseSuite* suite = nullptr;
  std::vector<int> slot;  // kind -> index in report.kinds; -1: left out
  std::mutex mu;          // guards report, bodies, done
  AbuseReport report;
  std::map<std::string, std::string> data_by_body;  // valid: the first reply's fingerprint
  int64_t done = 0;
  int64_t total = 0;
  int64_t sample_every = 1;
  bool main_phase = false;  // RSS sampled every sample_every cases
  std::atomic<int> open{0};
  std::atomic<int> max_open{0};
};

// A connection counted in Run::open while it is open.
class Counted {
 public:
  Counted(Run* run, RawHttpConnection c) : run_(run), c_(std::move(c)) {
    const int now = run_->open.fetch_add(1) + 1;
    int seen = run_->max_open.load();
    while (now > seen && !run_->max_open.compare_exchange_weak(seen, now)) {
    }
  }
  ~Counted() { Close(); }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  RawHttpConnection& conn() { return c_; }
  void Close() {
    if (!c_.open()) return;
    c_.Close();
    run_->open.fetch_sub(1);
  }

 private:
  Run* run_;
  RawHttpConnection c_;
};

// Empty when `reply` is a correct answer to the valid case `c` (the suite's check, and the
// same fingerprint as every earlier reply to the same body), else why not.
std::string CheckValid(const AbuseCase& c, const HttpReply& reply, Run& run) {
  std::string fingerprint;
  const std::string why = run.suite->CheckValid(c, reply, &fingerprint);
  if (!why.empty()) return why;
  std::lock_guard<std::mutex> lock(run.mu);
  auto [it, first] = run.data_by_body.emplace(c.body, fingerprint);
  if (!first && it->second != fingerprint) {
    return "data differ from an earlier reply to the same body";
  }
  return "";
}

struct AbuseOutcome {
  int status = kTransportError;
  std::string why;  // a mismatch: what was got
  int retries = 0;
};

// Sends case `c` once on a new connection; `barrier` (may be empty) runs once it is open.
AbuseOutcome SendOnce(Run& run, const AbuseCase& c, const std::function<void()>& barrier) {
  AbuseOutcome o;
  auto opened = RawHttpConnection::Open(run.host, run.port, run.options->timeout_s);
  if (!opened.ok()) {
    if (barrier) barrier();
    o.why = opened.status().message();
    return o;
  }
  Counted conn(&run, std::move(*opened));
  if (barrier) barrier();
  const core::Status sent = conn.conn().Send(c.request);
  if (c.action == AbuseAction::kCloseAfterSend) {
    conn.Close();
    o.status = kNoReply;
    return o;
  }
  auto reply = conn.conn().ReadReply();
  if (!reply.ok()) {
    o.why = (sent.ok() ? "" : "send: " + sent.message() + "; ") + reply.status().message();
    return o;
  }
  o.status = reply->status;
  const int expected = run.suite->Kinds()[static_cast<size_t>(c.kind)].expected_status;
  if (o.status == 200 && expected == 200) {
    o.why = CheckValid(c, *reply, run);
  } else if (o.status != expected) {
    o.why = fmt::format("{}", Printable(reply->body, 160));
  }
  return o;
}

void SampleRss(Run& run, const std::string& phase) {
  if (run.options->server_pid < 0) return;
  auto rss = core::ResidentBytes(run.options->server_pid);
  if (!rss.ok()) return;
  run.report.rss.push_back({run.done, *rss, phase});
}

void RunCase(Run& run, const AbuseCase& c, const std::function<void()>& barrier) {
  const AbuseKind& kind = run.suite->Kinds()[static_cast<size_t>(c.kind)];
  AbuseOutcome o = SendOnce(run, c, barrier);
  int retries = 0;
  while (kind.group == AbuseGroup::kValid && o.status == 429 &&
         retries < run.options->retries_429) {
    ++retries;
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * retries));
    o = SendOnce(run, c, {});
  }
  const bool mismatch = o.status != kind.expected_status || !o.why.empty();
  std::lock_guard<std::mutex> lock(run.mu);
  AbuseReport& r = run.report;
  AbuseKindReport& k = r.kinds[static_cast<size_t>(run.slot[static_cast<size_t>(c.kind)])];
  ++k.sent;
  ++k.got[o.status];
  ++r.sent;
  r.retried_429 += retries;
  if (kind.group == AbuseGroup::kValid) {
    ++r.valid_sent;
    if (!mismatch) ++r.valid_answered;
  }
  if (mismatch) {
    ++k.mismatches;
    ++r.mismatches;
    if (k.examples.size() < kMaxAbuseExamples) {
      k.examples.push_back(fmt::format(
          "'{}': got {}{}", FirstLine(c.request),
          o.status == kTransportError ? std::string("no reply") : std::to_string(o.status),
          o.why.empty() ? "" : ": " + o.why));
    }
  }
  ++run.done;
  if (run.main_phase && run.done % run.sample_every == 0) SampleRss(run, "main");
  if (run.options->progress) run.options->progress(run.done, run.total);
}

// Sends cases [begin, end) over min(connections, end - begin) threads. With `hold`, each
// thread waits after opening its first connection until all are open (<= 2 s).
void RunPhase(Run& run, const std::vector<AbuseCase>& cases, size_t begin, size_t end, bool hold) {
  if (begin >= end) return;
  const int threads = static_cast<int>(
      std::min<size_t>(static_cast<size_t>(run.options->connections), end - begin));
  std::atomic<size_t> next{begin};
  std::atomic<int> arrived{0};
  auto barrier = [&] {
    arrived.fetch_add(1);
    const Clock::time_point t0 = Clock::now();
    while (arrived.load() < threads && core::SecondsSince(t0) < 2.0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      bool first = hold;
      for (;;) {
        const size_t i = next.fetch_add(1);
        if (i >= end) {
          if (first) barrier();
          return;
        }
        RunCase(run, cases[i], first ? std::function<void()>(barrier) : std::function<void()>());
        first = false;
      }
    });
  }
  for (std::thread& t : pool) t.join();
}

// Waits until the server has nothing queued or in flight (two readings 100 ms apart), so an
// RSS sample is taken idle and requests whose clients left have finished; <= 60 s.
void Drain(Run& run) {
  const Clock::time_point t0 = Clock::now();
  int idle = 0;
  while (idle < 2 && core::SecondsSince(t0) < 60) {
    auto m = Get(run.host, run.port, "/v1/metrics", 10);
    bool now_idle = false;
    if (m.ok() && m->status == 200) {
      auto j = core::ParseJson(m->body, "metrics");
      now_idle = j.ok() && j->value("queue_length", -1) == 0 && j->value("in_flight", -1) == 0;
    }
    idle = now_idle ? idle + 1 : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

core::Status ValidateOptions(const AbuseOptions& o) {
  if (o.requests < 1 || o.requests > kMaxAbuseRequests) {
    return core::InvalidArgument(
        fmt::format("requests: got {}, must be in [1, {}]", o.requests, kMaxAbuseRequests));
  }
  if (o.connections < 1 || o.connections > kMaxAbuseConnections) {
    return core::InvalidArgument(fmt::format("connections: got {}, must be in [1, {}]",
                                             o.connections, kMaxAbuseConnections));
  }
  if (!(o.timeout_s >= 1) || o.timeout_s > 3600) {
    return core::InvalidArgument(
        fmt::format("timeout: got {}, must be in [1, 3600] s", o.timeout_s));
  }
  if (!(o.warmup_fraction >= 0) || o.warmup_fraction >= 1) {
    return core::InvalidArgument(
        fmt::format("warmup fraction: got {}, must be in [0, 1)", o.warmup_fraction));
  }
  if (o.rss_bound_bytes < 0) {
    return core::InvalidArgument(
        fmt::format("rss bound: got {} bytes, must be >= 0", o.rss_bound_bytes));
  }
  if (o.server_pid < -1) {
    return core::InvalidArgument(fmt::format(
        "server-pid: got {}, must be a process id (0: this process, -1: none)", o.server_pid));
  }
  if (o.retries_429 < 0 || o.retries_429 > 100) {
    return core::InvalidArgument(
        fmt::format("retries: got {}, must be in [0, 100]", o.retries_429));
  }
  return core::Status::Ok();
}

}  // namespace

void JudgeAbuse(AbuseReport* r) {
  r->failures.clear();
  int64_t mismatches = r->mismatches;
  int64_t by_kind = 0;
  std::string which;
  for (const AbuseKindReport& k : r->kinds) {
    by_kind += k.mismatches;
    if (k.mismatches > 0) {
      which += fmt::format("{}{} x{}", which.empty() ? "" : ", ", k.name, k.mismatches);
    }
  }
  mismatches = std::max(mismatches, by_kind);
  if (r->sent == 0) r->failures.push_back("no case was sent");
  if (mismatches > 0) {
    r->failures.push_back(fmt::format(
        "{} of {} cases did not get the status the contract gives them (or a correct body): {}",
        mismatches, r->sent, which.empty() ? "see the totals" : which));
  }
  if (r->valid_answered < r->valid_sent) {
    r->failures.push_back(
        fmt::format("{} of {} valid requests were not answered 200 with a "
                    "correct body",
                    r->valid_sent - r->valid_answered, r->valid_sent));
  }
  if (r->max_open_connections < r->connections_required) {
    r->failures.push_back(fmt::format("at most {} connections were open at once, {} required",
                                      r->max_open_connections, r->connections_required));
  }
  if (!r->healthy_at_end) {
    r->failures.push_back("not healthy at the end: GET /healthz: " + r->health_detail);
  }
  if (r->rss_sampled) {
    if (r->rss_warm_bytes <= 0 || r->rss_end_bytes <= 0) {
      r->failures.push_back(
          "the server's RSS could not be read after the warm-up and at the end "
          "(the process is gone?)");
    } else if (r->rss_end_bytes - r->rss_warm_bytes > r->rss_bound_bytes) {
      r->failures.push_back(fmt::format(
          "RSS grew by {} bytes from the warm-up ({}) to the end ({}), more than the bound {}",
          r->rss_end_bytes - r->rss_warm_bytes, r->rss_warm_bytes, r->rss_end_bytes,
          r->rss_bound_bytes));
    }
  }
  r->pass = r->failures.empty();
}

core::StatusOr<AbuseReport> RunAbuse(const AbuseOptions& o, const AbuseSuite& suite) {
  RETURN_IF_ERROR(ValidateOptions(o));
  Run run;
  run.options = &o;
  run.suite = &suite;
  RETURN_IF_ERROR(ParseHttpUrl(o.url, &run.host, &run.port));
  {
    auto h = Get(run.host, run.port, "/healthz", 10);
    if (!h.ok() || h->status != 200) {
      return core::Unavailable(fmt::format(
          "cannot reach a healthy server at {}: {}", o.url,
          h.ok() ? "GET /healthz answered " + std::to_string(h->status) : h.status().message()));
    }
  }
  if (o.server_pid >= 0) {
    auto rss = core::ResidentBytes(o.server_pid);
    if (!rss.ok()) return core::Unavailable("server-pid: " + rss.status().message());
  }
  AbusePlanContext ctx;
  ctx.host = run.host;
  ctx.port = run.port;
  ctx.max_body_bytes = o.max_body_bytes;
  if (auto m = Get(run.host, run.port, "/v1/metrics", 10); m.ok() && m->status == 200) {
    auto j = core::ParseJson(m->body, "metrics");
    if (j.ok() && j->is_object()) ctx.budget_bytes = j->value("budget_bytes", int64_t{0});
  }
  ASSIGN_OR_RETURN(const std::vector<AbuseCase> cases, PlanAbuse(suite, o.requests, o.seed, ctx));

  AbuseReport& r = run.report;
  const std::vector<AbuseKind>& kinds = suite.Kinds();
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (!suite.KindEnabled(static_cast<int>(k), ctx)) {
      run.slot.push_back(-1);
      r.kinds_left_out.push_back(kinds[k].name);
      continue;
    }
    run.slot.push_back(static_cast<int>(r.kinds.size()));
    AbuseKindReport kr;
    kr.name = kinds[k].name;
    kr.group = AbuseGroupName(kinds[k].group);
    kr.expected_status = kinds[k].expected_status;
    r.kinds.push_back(std::move(kr));
  }
  const auto n = static_cast<size_t>(o.requests);
  // At least one case per connection, so the warm-up starts every client thread and keeps
  // every server thread busy; at most half the cases.
  const size_t warm = std::min(
      n / 2, std::max(static_cast<size_t>(std::ceil(o.warmup_fraction * static_cast<double>(n))),
                      static_cast<size_t>(o.connections)));
  run.total = o.requests;
  run.sample_every = std::max<int64_t>(1, o.requests / 20);
  r.connections = o.connections;
  r.connections_required = static_cast<int>(std::min<size_t>(o.connections, n - warm));
  r.rss_sampled = o.server_pid >= 0;
  r.rss_bound_bytes = o.rss_bound_bytes;

  const Clock::time_point t0 = Clock::now();
  RunPhase(run, cases, 0, warm, false);
  Drain(run);
  SampleRss(run, "warm");
  if (!r.rss.empty()) r.rss_warm_bytes = r.rss.back().rss_bytes;
  run.max_open = 0;  // counted over the main phase
  run.main_phase = true;
  RunPhase(run, cases, warm, n, true);
  r.max_open_connections = run.max_open.load();
  Drain(run);
  auto h = Get(run.host, run.port, "/healthz", 10);
  if (h.ok()) {
    auto j = core::ParseJson(h->body, "healthz");
    r.healthy_at_end = h->status == 200 && j.ok() && j->value("status", "") == "ok";
    r.health_detail = fmt::format("{} {}", h->status, Printable(h->body, 120));
  } else {
    r.health_detail = h.status().message();
  }
  const size_t before_end = r.rss.size();
  SampleRss(run, "end");
  if (r.rss.size() > before_end) r.rss_end_bytes = r.rss.back().rss_bytes;
  r.wall_s = core::SecondsSince(t0);
  JudgeAbuse(&r);
  return std::move(run.report);
}

core::Json ToJson(const AbuseReport& r, const AbuseOptions& o, std::string_view format) {
  core::Json kinds = core::Json::array();
  for (const AbuseKindReport& k : r.kinds) {
    core::Json got = core::Json::object();
    for (const auto& [status, n] : k.got) got[std::to_string(status)] = n;
    kinds.push_back({{"kind", k.name},
                     {"group", k.group},
                     {"expected_status", k.expected_status},
                     {"sent", k.sent},
                     {"got", got},
                     {"mismatches", k.mismatches},
                     {"examples", k.examples}});
  }
  core::Json rss = core::Json::array();
  for (const RssSample& s : r.rss) {
    rss.push_back({{"completed", s.completed}, {"rss_bytes", s.rss_bytes}, {"phase", s.phase}});
  }
  return {{"format", format},
          {"label", "measured"},
          {"url", o.url},
          {"requests", o.requests},
          {"connections", o.connections},
          {"seed", o.seed},
          {"server_pid", o.server_pid},
          {"warmup_fraction", o.warmup_fraction},
          {"sent", r.sent},
          {"mismatches", r.mismatches},
          {"valid_sent", r.valid_sent},
          {"valid_answered", r.valid_answered},
          {"retried_429", r.retried_429},
          {"connections_required", r.connections_required},
          {"max_open_connections", r.max_open_connections},
          {"rss_sampled", r.rss_sampled},
          {"rss_warm_bytes", r.rss_warm_bytes},
          {"rss_end_bytes", r.rss_end_bytes},
          {"rss_bound_bytes", r.rss_bound_bytes},
          {"rss", rss},
          {"healthy_at_end", r.healthy_at_end},
          {"health_detail", r.health_detail},
          {"kinds_left_out", r.kinds_left_out},
          {"kinds", kinds},
          {"wall_s", r.wall_s},
          {"pass", r.pass},
          {"failures", r.failures}};
}

}  // namespace tessera::serve

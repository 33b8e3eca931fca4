// RunAbuse: proves that a server on the serving core survives abuse. A seeded client sends
// `requests` cases drawn from the abuse table of a suite the system supplies (abuse_suite.h:
// malformed JSON, wrong types, absurd values, bodies over the limit, unknown routes, wrong
// methods, clients that disconnect mid-request, and a share of valid small requests) over
// `connections` concurrent raw TCP connections, and checks every reply against the status the
// server's contract gives it. The server must answer GET /healthz and GET /v1/metrics (with
// queue_length and in_flight; budget_bytes when it has one) as the core's servers do.
//
// Phases: (1) warm-up: the first max(ceil(warmup_fraction x requests), connections) cases, at
//   most half of them (the plan starts with one of every kind, and every client and server
//   thread gets work), over the same connections; then the server is drained (GET /v1/metrics until
//   nothing is queued or in flight, <= 60 s) and its RSS sampled: rss_warm_bytes. (2) main: the
//   other cases; every thread first opens its connection and waits (<= 2 s, under the server's
//   head deadline, 10 s by default) until all `connections` are open at once:
//   max_open_connections counts the
//   connections open at the same time, client side. RSS is sampled every 5% of the cases.
//   Then the server is drained again, GET /healthz must answer 200 {"status": "ok"}, and the
//   RSS is sampled: rss_end_bytes.
//
// What passes (JudgeAbuse; `failures` says why not):
//   - every case got its kind's expected status (a disconnect case: the client connected and
//     closed; a transport error or timeout on any case is a mismatch: the server hung or died);
//   - every valid request was answered: 200 with a body the suite's CheckValid accepts, whose
//     fingerprint equals that of every other reply to the same body. A 429 (queue full,
//     server.h) is retried up to retries_429 times with a growing pause; 503 and anything
//     else is not an answer (nothing stops the server and valid requests carry no deadline);
//   - max_open_connections >= min(connections, main-phase cases);
//   - the server is healthy at the end;
//   - when RSS is sampled: rss_end_bytes <= rss_warm_bytes + rss_bound_bytes (both taken with
//     the server idle, so the difference is what the run kept).
//
// RSS: server_pid > 0 reads /proc/<pid>/status; 0 reads this process (a server run in-process;
// the client's own memory is then included, its threads all started before the warm sample);
// -1: not sampled (the RSS check is skipped and the report says so).
// Errors: InvalidArgument for bad options (naming the option); Unavailable when the server
// cannot be reached before the run (GET /healthz) or the RSS of server_pid cannot be read.
// Thread-safety: RunAbuse is reentrant; `progress` is called from the client threads, one at a
// time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "serve/abuse_suite.h"

namespace tessera::serve {

inline constexpr int kMaxAbuseConnections = 1000;
inline constexpr int64_t kMaxAbuseRequests = 1000000;
inline constexpr int kNoReply = 0;          // a disconnect case: the client closed first
inline constexpr int kTransportError = -1;  // no connection, reset, timeout or no HTTP reply
inline constexpr size_t kMaxAbuseExamples = 3;

struct AbuseOptions {
  std::string url;  // http://HOST:PORT
  int64_t requests = 1000;
  int connections = 200;
  uint64_t seed = 1;
  int server_pid = -1;    // see the file comment
  double timeout_s = 60;  // per request: connect, send, reply
  double warmup_fraction = 0.1;
  int64_t rss_bound_bytes = int64_t{16} << 20;
  int64_t max_body_bytes = 64 * 1024;  // the server's body limit
  int retries_429 = 5;
  std::function<void(int64_t done, int64_t total)> progress;
};

struct AbuseKindReport {
  std::string name;
  std::string group;
  int expected_status = 0;
  int64_t sent = 0;
  std::map<int, int64_t> got;         // by status (kNoReply, kTransportError included)
  int64_t mismatches = 0;             // got another status, or a valid reply with a wrong body
  std::vector<std::string> examples;  // the first kMaxAbuseExamples mismatches
};

struct RssSample {
  int64_t completed = 0;  // cases finished when sampled
  int64_t rss_bytes = 0;
  std::string phase;  // "warm" (idle after warm-up), "main", "end" (idle after the run)
};

struct AbuseReport {
  std::vector<AbuseKindReport> kinds;       // the table's order, enabled kinds only
  std::vector<std::string> kinds_left_out;  // e.g. over_budget when the budget would run it
  int64_t sent = 0;
  int64_t mismatches = 0;
  int64_t valid_sent = 0;
  int64_t valid_answered = 0;
  int64_t retried_429 = 0;
  int connections = 0;           // asked for
  int connections_required = 0;  // min(connections, main-phase cases)
  int max_open_connections = 0;  // client side, over the main phase
  bool rss_sampled = false;
  std::vector<RssSample> rss;
  int64_t rss_warm_bytes = 0, rss_end_bytes = 0, rss_bound_bytes = 0;
  bool healthy_at_end = false;
  std::string health_detail;  // what /healthz answered when not healthy
  double wall_s = 0;
  bool pass = false;
  std::vector<std::string> failures;
};

// Sets pass and failures from the counts (see the file comment); changes nothing else.
void JudgeAbuse(AbuseReport* report);

core::StatusOr<AbuseReport> RunAbuse(const AbuseOptions& options, const AbuseSuite& suite);

// {"format": `format`, "label": "measured", options, totals, "kinds": [...], "rss": [...],
//  "pass", "failures"}
core::Json ToJson(const AbuseReport& report, const AbuseOptions& options, std::string_view format);

}  // namespace tessera::serve

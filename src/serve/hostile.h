// RunHostile: the hostile-client cases of the abuse tool (abuse.h sends bad requests; these
// attack the HTTP layer itself), against any server on the serving core: slow heads, slow
// bodies, idle connections, header floods, Range, pipelining, half-close, framing conflicts,
// mid-body disconnects, and (optionally, last) a SIGTERM during a trickle with a request in
// flight. Each case reports what the server did, with its RSS and open file descriptors
// before and after (/proc/<server_pid>; not sampled when server_pid is -1) and a verdict.
//
// Cases (names for HostileOptions::cases):
//   slow_headers   slow_sockets sockets each send one byte of a head every slow_interval_s for
//                  slow_seconds, reconnecting when the server closes them; meanwhile GET
//                  /healthz every second and the valid request three times: passes when
//                  /healthz stays within 100 ms and the valid request within 2x its idle
//                  latency (measured first)
//   slow_body      slow_sockets / 4 sockets send a head, then one body byte per interval, for
//                  slow_seconds / 4: passes when /healthz stays within 100 ms
//   idle           idle_sockets connections that send nothing, held idle_seconds: /healthz
//                  within 100 ms
//   header_flood   flood_connections connections each send up to flood_bytes of one header
//                  (and one sends a line with no end): each is refused (431 / 414 / closed)
//                  before flood_bytes, never answered 200
//   range          the valid request with a Range of 2,700 ranges: 200 and a body no larger
//                  than 1.5x the plain reply's
//   pipelining     10 GET /healthz in one write: 10 replies, all 200
//   half_close     the valid request, then the client shuts its sending side: a 200
//   framing        Transfer-Encoding with Content-Length, two Content-Lengths, a header line
//                  without a colon: 400 each; a chunked body past max_body_bytes: one 413
//   mid_body       50 connections send a head and half a body, then close: /healthz 200
//   shutdown       (only with shutdown = true and a server_pid) 20 trickling sockets and the
//                  valid request in flight, then SIGTERM: the valid request answered and the
//                  process gone within drain_deadline_s + 1 s
// Overall (with RSS): the peak RSS over every case at most 64 MiB above the start, and the
// end within 16 MiB of it.
// Units: seconds, bytes. Errors: InvalidArgument for bad options (naming the option),
// Unavailable when the server does not answer GET /healthz before the run.
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::serve {

struct HostileOptions {
  std::string url;  // http://HOST:PORT
  int server_pid = -1;
  std::string valid_path;  // a valid POST the system answers 200 (its body below)
  std::string valid_body;
  int64_t max_body_bytes = 64 * 1024;  // the server's body limit
  int slow_sockets = 300;
  double slow_seconds = 60;
  double slow_interval_s = 3;
  int idle_sockets = 1000;
  double idle_seconds = 10;
  int flood_connections = 4;
  int64_t flood_bytes = int64_t{48} << 20;
  double timeout_s = 120;  // any one exchange
  bool shutdown = false;
  double drain_deadline_s = 30;    // the server's, for the shutdown case's verdict
  std::vector<std::string> cases;  // empty: every case (shutdown only when `shutdown`)
};

struct HostileCase {
  std::string name;
  std::string outcome;  // what the server did, one line
  bool pass = false;
  int64_t rss_before = -1, rss_after = -1;  // bytes; -1: not sampled
  int fds_before = -1, fds_after = -1;
  double healthz_max_s = -1;  // during the case; -1: not probed
  double valid_s = -1;        // the valid request's latency during the case (median)
  double wall_s = 0;
};

struct HostileReport {
  std::vector<HostileCase> cases;
  double idle_valid_s = 0;    // the valid request alone (median of 3)
  double idle_healthz_s = 0;  // GET /healthz alone (median of 5)
  int64_t rss_start = -1, rss_peak = -1, rss_end = -1;
  bool pass = false;
  std::vector<std::string> failures;
};

core::StatusOr<HostileReport> RunHostile(const HostileOptions& options);

// {"format": "tessera.serve.hostile/1", "label": "measured", options, cases, rss, pass}
core::Json ToJson(const HostileReport& report, const HostileOptions& options);

}  // namespace tessera::serve

// An open-loop load generator for any server on the serving core (server.h) or speaking its
// shell (GET /healthz): requests arrive at seeded Poisson or Gamma times (arrivals.h), each
// drawn from the templates of a RequestSource the system supplies (request_source.h), and are
// sent whether or not earlier ones have been answered, each on its own thread and connection,
// at most max_in_flight at once (an arrival beyond that is counted not_sent and as an SLO
// miss: open loop means the generator never slows down).
//
// SLO: first every template is sent kSoloRuns times in a row, alone and in order (the first
// requests may load a model, plan the template or map its arena); the last one's latency is
// its "solo" latency. A request of template t meets its SLO when it is answered 200 within
// slo_scale x solo(t). A template whose solo requests are refused (e.g. 507) keeps the error
// in solo_error; its requests are still sent and never meet the SLO.
// Attainment = met / planned arrivals (errors, refusals and not_sent count as misses).
// Latencies are client-side wall-clock seconds, request sent to reply read.
//
// Errors: InvalidArgument for bad options (naming the option: url, rate, cv, duration,
// slo-scale, mix); Unavailable when the server cannot be reached; FailedPrecondition when no
// solo request of any template is answered 200 (the first template's error included).
// Thread-safety: RunLoadgen is reentrant; `progress` is called on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "serve/arrivals.h"
#include "serve/request_source.h"

namespace tessera::serve {

struct LoadgenOptions {
  std::string url;  // http://HOST:PORT
  double rate_rps = 1;
  ArrivalKind arrivals = ArrivalKind::kPoisson;
  double cv = 1;  // gamma only
  double duration_s = 10;
  uint64_t seed = 1;
  double slo_scale = 5;
  int max_in_flight = 256;
  double timeout_s = 600;  // per request
  // SLO reference per template (size: the source's Count()): the SLO of template t is
  // slo_scale x reference_solo_s[t] instead of this server's own solo latency (the solo
  // requests are still sent, as warm-up). Lets servers be compared against one isolated
  // latency. Empty: own.
  std::vector<double> reference_solo_s;
  // A recorded arrival trace (arrivals.h): when not empty, its times and templates replace
  // the generated ones (rate, arrivals, cv and duration are then unused).
  std::vector<TraceArrival> trace;
  std::function<void(int64_t done, int64_t total)> progress;
};

inline constexpr int kSoloRuns = 3;

struct TemplateLoad {
  std::string label;
  double solo_latency_s = 0;
  std::string solo_error;  // why its solo requests failed; empty when they were served
  int64_t sent = 0, completed = 0, slo_met = 0;
};

// One sent request: its template (index into the source), HTTP status (0: transport error)
// and latency.
struct RequestOutcome {
  int template_index = 0;
  int status = 0;
  double latency_s = 0;
};

struct LoadgenReport {
  int64_t planned = 0;    // arrivals in the duration
  int64_t sent = 0;       // requests sent
  int64_t completed = 0;  // answered 200
  int64_t not_sent = 0;   // max_in_flight reached
  int64_t transport_errors = 0;
  std::map<int, int64_t> status_counts;  // by HTTP status
  int64_t slo_met = 0;
  double slo_attainment = 0;                    // slo_met / planned
  double latency_p50_s = 0, latency_p99_s = 0;  // of completed requests
  double throughput_rps = 0;                    // completed / wall_s
  double wall_s = 0;                            // first arrival to last reply
  std::vector<TemplateLoad> templates;
  std::vector<RequestOutcome> outcomes;  // every sent request, in completion order
};

// Attainment of `report` at another SLO: requests answered 200 within slo_scale x solo_s[t]
// over the planned arrivals (solo_s: one per template; a template with solo_s <= 0 never meets
// it). The report's own figure is AttainmentAt(report, SLO references used, its slo_scale).
double AttainmentAt(const LoadgenReport& report, const std::vector<double>& solo_s,
                    double slo_scale);

core::StatusOr<LoadgenReport> RunLoadgen(const LoadgenOptions& options,
                                         const RequestSource& source);

// One planned arrival of a load: when, which template of the source, and the request's seed.
struct PlannedArrival {
  double at_s = 0;
  int template_index = 0;
  uint64_t seed = 0;
};
// The arrivals RunLoadgen sends for `options` (rate, arrivals, cv, duration, seed, or the
// trace) over the templates of `source`, in order: a serving simulation replays exactly the
// load a real run sends. InvalidArgument for a bad rate, duration, mix or trace entry.
core::StatusOr<std::vector<PlannedArrival>> PlanArrivals(const LoadgenOptions& options,
                                                         const RequestSource& source);

// {"format": `format`, "label": "measured", the options, the totals, "templates": [...]}.
core::Json ToJson(const LoadgenReport& report, const LoadgenOptions& options,
                  std::string_view format);

}  // namespace tessera::serve

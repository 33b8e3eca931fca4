#include "xema/serve/loadgen.h"

#include <fmt/format.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "core/elapsed.h"
#include "core/parse_number.h"
#include "xema/serve/request_json.h"
#include "xema/serve/serve_metrics.h"

namespace tessera::xema {
namespace {

using Clock = std::chrono::steady_clock;

struct Outcome {
  int status = 0;  // 0: transport error
  double latency_s = 0;
  std::string body;
};

Outcome Send(const std::string& host, int port, const LoadTemplate& t, uint64_t seed,
             double timeout_s) {
  httplib::Client client(host, port);
  client.set_connection_timeout(5, 0);
  const auto secs = static_cast<time_t>(timeout_s);
  client.set_read_timeout(secs, 0);
  client.set_write_timeout(secs, 0);
  const Clock::time_point t0 = Clock::now();
  auto res = client.Post(GenerationRoute(t.video ? GenerationKind::kVideo : GenerationKind::kImage),
                         RequestBody(t, seed), "application/json");
  Outcome o;
  o.latency_s = core::SecondsSince(t0);
  if (res) {
    o.status = res->status;
    o.body = res->body.size() > 300 ? res->body.substr(0, 300) + "..." : res->body;
  } else {
    o.body = httplib::to_string(res.error());
  }
  return o;
}

core::Status ValidateOptions(const LoadgenOptions& o, std::string* host, int* port) {
  RETURN_IF_ERROR(ParseHttpUrl(o.url, host, port));
  if (o.mix.empty()) return core::InvalidArgument("mix: got no templates, need at least one");
  if (!(o.slo_scale > 0) || o.slo_scale > 1e6) {
    return core::InvalidArgument(
        fmt::format("slo-scale: got {}, must be in (0, 1e6]", o.slo_scale));
  }
  if (o.max_in_flight < 1 || o.max_in_flight > 4096) {
    return core::InvalidArgument(
        fmt::format("max-in-flight: got {}, must be in [1, 4096]", o.max_in_flight));
  }
  if (!o.reference_solo_s.empty() && o.reference_solo_s.size() != o.mix.size()) {
    return core::InvalidArgument(fmt::format("reference_solo_s: got {} values for {} templates",
                                             o.reference_solo_s.size(), o.mix.size()));
  }
  if (!(o.timeout_s >= 1) || o.timeout_s > 86400) {
    return core::InvalidArgument(
        fmt::format("timeout: got {}, must be in [1, 86400] s", o.timeout_s));
  }
  return core::Status::Ok();
}

// Index of the template for a uniform draw u in [0, 1).
size_t Pick(const std::vector<LoadTemplate>& mix, double u) {
  double total = 0;
  for (const LoadTemplate& t : mix) total += t.weight;
  double acc = 0;
  for (size_t i = 0; i < mix.size(); ++i) {
    acc += mix[i].weight / total;
    if (u < acc) return i;
  }
  return mix.size() - 1;
}

}  // namespace

core::Status ParseHttpUrl(const std::string& url, std::string* host, int* port) {
  auto bad = [&] {
    const std::string shown = url.size() > 60 ? url.substr(0, 60) + "..." : url;
    return core::InvalidArgument("url: got '" + shown +
                                 "', must be http://HOST:PORT (e.g. http://127.0.0.1:8000)");
  };
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return bad();
  std::string rest = url.substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad();
  const std::string h = rest.substr(0, colon);
  for (char c : h) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) {
      return bad();
    }
  }
  auto p = core::ParseInteger(rest.substr(colon + 1), 1, 65535);
  if (!p.ok()) return bad();
  *host = h;
  *port = static_cast<int>(*p);
  return core::Status::Ok();
}

double AttainmentAt(const LoadgenReport& report, const std::vector<double>& solo_s,
                    double slo_scale) {
  if (report.planned <= 0) return 0;
  int64_t met = 0;
  for (const RequestOutcome& r : report.outcomes) {
    const size_t t = static_cast<size_t>(r.template_index);
    if (r.status == 200 && t < solo_s.size() && solo_s[t] > 0 &&
        r.latency_s <= slo_scale * solo_s[t]) {
      ++met;
    }
  }
  return static_cast<double>(met) / static_cast<double>(report.planned);
}

core::StatusOr<std::vector<PlannedArrival>> PlanArrivals(const LoadgenOptions& o) {
  if (o.mix.empty()) return core::InvalidArgument("mix: got no templates, need at least one");
  std::vector<double> times;
  if (o.trace.empty()) {
    ASSIGN_OR_RETURN(times, ArrivalTimes(o.arrivals, o.rate_rps, o.cv, o.duration_s, o.seed));
  } else {
    for (const TraceArrival& a : o.trace) {
      if (a.template_index < 0 || a.template_index >= static_cast<int>(o.mix.size())) {
        return core::InvalidArgument(fmt::format("trace: template {} is not in the mix of {}",
                                                 a.template_index, o.mix.size()));
      }
      times.push_back(a.at_s);
    }
  }
  std::vector<PlannedArrival> out;
  out.reserve(times.size());
  core::Rng rng = core::Rng(o.seed).Fork(1);
  for (size_t i = 0; i < times.size(); ++i) {
    const double u = rng.Uniform();  // drawn either way: seeds do not depend on the source
    const size_t k =
        o.trace.empty() ? Pick(o.mix, u) : static_cast<size_t>(o.trace[i].template_index);
    out.push_back({times[i], static_cast<int>(k), rng.NextU64()});
  }
  return out;
}

core::StatusOr<LoadgenReport> RunLoadgen(const LoadgenOptions& o) {
  std::string host;
  int port = 0;
  RETURN_IF_ERROR(ValidateOptions(o, &host, &port));
  ASSIGN_OR_RETURN(const std::vector<PlannedArrival> arrivals, PlanArrivals(o));
  {
    httplib::Client client(host, port);
    client.set_connection_timeout(5, 0);
    auto res = client.Get("/healthz");
    if (!res || res->status != 200) {
      return core::Unavailable(
          fmt::format("cannot reach a healthy server at {}: {}", o.url,
                      res ? "GET /healthz answered " + std::to_string(res->status)
                          : httplib::to_string(res.error())));
    }
  }
  LoadgenReport report;
  for (const LoadTemplate& t : o.mix) {
    // The first requests of a template may load a model, plan the template and map its arena:
    // kSoloRuns in a row, the last one timed.
    Outcome solo;
    for (int i = 0; i < kSoloRuns; ++i) {
      solo = Send(host, port, t, o.seed + static_cast<uint64_t>(i), o.timeout_s);
      if (solo.status != 200) break;
    }
    if (solo.status == 0) {
      return core::Unavailable(
          fmt::format("solo request of template {}: no reply: {}", t.label, solo.body));
    }
    TemplateLoad tl;
    tl.label = t.label;
    if (solo.status == 200) {
      tl.solo_latency_s = solo.latency_s;
    } else {
      tl.solo_error = fmt::format("HTTP {}: {}", solo.status, solo.body);
    }
    report.templates.push_back(std::move(tl));
  }
  bool any_solo = false;
  for (const TemplateLoad& tl : report.templates) any_solo = any_solo || tl.solo_error.empty();
  if (!any_solo) {
    return core::FailedPrecondition(
        "no template of the mix is served alone: " + report.templates[0].label + ": " +
        report.templates[0].solo_error);
  }

  // The SLO reference of each template: given, or its solo latency here.
  std::vector<double> slo_s;
  for (size_t t = 0; t < o.mix.size(); ++t) {
    slo_s.push_back(!o.reference_solo_s.empty()              ? o.reference_solo_s[t]
                    : report.templates[t].solo_error.empty() ? report.templates[t].solo_latency_s
                                                             : 0.0);
  }
  report.planned = static_cast<int64_t>(arrivals.size());
  std::mutex mu;  // guards report and latencies
  std::deque<double> latencies;
  std::atomic<int64_t> finished{0};
  std::atomic<int> in_flight{0};
  // Request threads; finished ones are joined as arrivals go, so at most about max_in_flight
  // are held however long the run.
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Worker> workers;
  auto reap = [&workers] {
    for (Worker& w : workers) {
      if (w.done->load()) w.thread.join();
    }
    std::erase_if(workers, [](const Worker& w) { return !w.thread.joinable(); });
  };
  const Clock::time_point t0 = Clock::now();
  auto tick = [&] {
    if (o.progress) o.progress(finished.load() + report.not_sent, report.planned);
  };
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const double at = arrivals[i].at_s;
    for (;;) {
      const double wait_s = at - core::SecondsSince(t0);
      if (wait_s <= 0) break;
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(wait_s, 0.1)));
      tick();
    }
    const auto k = static_cast<size_t>(arrivals[i].template_index);
    const uint64_t seed = arrivals[i].seed;
    if (in_flight.load() >= o.max_in_flight) {
      std::lock_guard<std::mutex> lock(mu);
      ++report.not_sent;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      ++report.sent;
      ++report.templates[k].sent;
    }
    in_flight.fetch_add(1);
    reap();
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers.push_back(
        {std::thread([&, k, seed, done] {
           const Outcome out = Send(host, port, o.mix[k], seed, o.timeout_s);
           {
             std::lock_guard<std::mutex> lock(mu);
             if (out.status == 0) {
               ++report.transport_errors;
             } else {
               ++report.status_counts[out.status];
             }
             report.outcomes.push_back({static_cast<int>(k), out.status, out.latency_s});
             if (out.status == 200) {
               ++report.completed;
               ++report.templates[k].completed;
               latencies.push_back(out.latency_s);
               if (slo_s[k] > 0 && out.latency_s <= o.slo_scale * slo_s[k]) {
                 ++report.slo_met;
                 ++report.templates[k].slo_met;
               }
             }
           }
           in_flight.fetch_sub(1);
           finished.fetch_add(1);
           done->store(true);
         }),
         done});
  }
  while (in_flight.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    tick();
  }
  for (Worker& w : workers) w.thread.join();
  tick();
  report.wall_s = core::SecondsSince(t0);
  report.slo_attainment =
      report.planned > 0 ? static_cast<double>(report.slo_met) / report.planned : 0;
  report.latency_p50_s = Percentile(latencies, 0.50);
  report.latency_p99_s = Percentile(latencies, 0.99);
  report.throughput_rps = report.wall_s > 0 ? report.completed / report.wall_s : 0;
  return report;
}

core::Json ToJson(const LoadgenReport& r, const LoadgenOptions& o) {
  core::Json status = core::Json::object();
  for (const auto& [code, n] : r.status_counts) status[std::to_string(code)] = n;
  core::Json templates = core::Json::array();
  for (size_t i = 0; i < r.templates.size(); ++i) {
    const TemplateLoad& t = r.templates[i];
    const double ref = i < o.reference_solo_s.size() ? o.reference_solo_s[i] : t.solo_latency_s;
    templates.push_back({{"template", t.label},
                         {"solo_latency_s", t.solo_latency_s},
                         {"slo_s", o.slo_scale * ref},
                         {"sent", t.sent},
                         {"completed", t.completed},
                         {"slo_met", t.slo_met},
                         {"solo_error", t.solo_error}});
  }
  return {{"format", "tessera.xema.loadgen/1"},
          {"label", "measured"},
          {"url", o.url},
          {"rate_rps", o.rate_rps},
          {"arrivals", !o.trace.empty()                      ? "trace"
                       : o.arrivals == ArrivalKind::kPoisson ? "poisson"
                                                             : "gamma"},
          {"cv", o.cv},
          {"duration_s", o.duration_s},
          {"seed", o.seed},
          {"slo_scale", o.slo_scale},
          {"planned", r.planned},
          {"sent", r.sent},
          {"completed", r.completed},
          {"not_sent", r.not_sent},
          {"transport_errors", r.transport_errors},
          {"status", status},
          {"slo_met", r.slo_met},
          {"slo_attainment", r.slo_attainment},
          {"latency_p50_s", r.latency_p50_s},
          {"latency_p99_s", r.latency_p99_s},
          {"throughput_rps", r.throughput_rps},
          {"wall_s", r.wall_s},
          {"templates", templates}};
}

}  // namespace tessera::xema

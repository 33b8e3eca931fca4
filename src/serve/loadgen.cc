#include "serve/loadgen.h"

#include <fmt/format.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "core/elapsed.h"
#include "serve/http_url.h"
#include "serve/serve_metrics.h"

namespace tessera::serve {
namespace {

using Clock = std::chrono::steady_clock;

struct Outcome {
  int status = 0;  // 0: transport error
  double latency_s = 0;
  std::string body;
};

Outcome Send(const std::string& host, int port, const LoadRequest& request, double timeout_s) {
  httplib::Client client(host, port);
  client.set_connection_timeout(5, 0);
  const auto secs = static_cast<time_t>(timeout_s);
  client.set_read_timeout(secs, 0);
  client.set_write_timeout(secs, 0);
  const Clock::time_point t0 = Clock::now();
  auto res = client.Post(request.path, request.body, request.content_type);
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

core::Status ValidateOptions(const LoadgenOptions& o, const RequestSource& source,
                             std::string* host, int* port) {
  RETURN_IF_ERROR(ParseHttpUrl(o.url, host, port));
  if (source.Count() == 0) return core::InvalidArgument("mix: got no templates, need at least one");
  if (!(o.slo_scale > 0) || o.slo_scale > 1e6) {
    return core::InvalidArgument(
        fmt::format("slo-scale: got {}, must be in (0, 1e6]", o.slo_scale));
  }
  if (o.max_in_flight < 1 || o.max_in_flight > 4096) {
    return core::InvalidArgument(
        fmt::format("max-in-flight: got {}, must be in [1, 4096]", o.max_in_flight));
  }
  if (!o.reference_solo_s.empty() && o.reference_solo_s.size() != source.Count()) {
    return core::InvalidArgument(fmt::format("reference_solo_s: got {} values for {} templates",
                                             o.reference_solo_s.size(), source.Count()));
  }
  if (!(o.timeout_s >= 1) || o.timeout_s > 86400) {
    return core::InvalidArgument(
        fmt::format("timeout: got {}, must be in [1, 86400] s", o.timeout_s));
  }
  return core::Status::Ok();
}

// Index of the template for a uniform draw u in [0, 1).
size_t Pick(const RequestSource& source, double u) {
  double total = 0;
  for (size_t i = 0; i < source.Count(); ++i) total += source.Weight(i);
  double acc = 0;
  for (size_t i = 0; i < source.Count(); ++i) {
    acc += source.Weight(i) / total;
    if (u < acc) return i;
  }
  return source.Count() - 1;
}

// Phase 1: Unavailable unless GET /healthz at host:port answers 200.
core::Status CheckHealthy(const std::string& host, int port, const std::string& url) {
  httplib::Client client(host, port);
  client.set_connection_timeout(5, 0);
  auto res = client.Get("/healthz");
  if (!res || res->status != 200) {
    return core::Unavailable(
        fmt::format("cannot reach a healthy server at {}: {}", url,
                    res ? "GET /healthz answered " + std::to_string(res->status)
                        : httplib::to_string(res.error())));
  }
  return core::Status::Ok();
}

// Phase 2, solo runs: per template of the mix, kSoloRuns requests in a row (the first may load
// a model, plan the template and map its arena), the last one timed, into report->templates.
// Unavailable when one gets no reply; FailedPrecondition when no template is served alone.
core::Status MeasureSolo(const LoadgenOptions& o, const RequestSource& source,
                         const std::string& host, int port, LoadgenReport* report) {
  for (size_t k = 0; k < source.Count(); ++k) {
    const std::string label = source.Label(k);
    // The first requests of a template may load a model, plan the template and map its arena:
    // kSoloRuns in a row, the last one timed.
    Outcome solo;
    for (int i = 0; i < kSoloRuns; ++i) {
      solo = Send(host, port, source.Request(k, o.seed + static_cast<uint64_t>(i)), o.timeout_s);
      if (solo.status != 200) break;
    }
    if (solo.status == 0) {
      return core::Unavailable(
          fmt::format("solo request of template {}: no reply: {}", label, solo.body));
    }
    TemplateLoad tl;
    tl.label = label;
    if (solo.status == 200) {
      tl.solo_latency_s = solo.latency_s;
    } else {
      tl.solo_error = fmt::format("HTTP {}: {}", solo.status, solo.body);
    }
    report->templates.push_back(std::move(tl));
  }
  bool any_solo = false;
  for (const TemplateLoad& tl : report->templates) any_solo = any_solo || tl.solo_error.empty();
  if (!any_solo) {
    return core::FailedPrecondition(
        "no template of the mix is served alone: " + report->templates[0].label + ": " +
        report->templates[0].solo_error);
  }
  return core::Status::Ok();
}

// Phase 3, the open loop: sends each planned arrival at its time from a thread of its own
// (none while max_in_flight are in flight: counted not sent), records each outcome in the
// report (against the SLO reference slo_s[template]) and waits for the last reply. One Run
// per object; the report is guarded by the object's mutex while requests are in flight.
class OpenLoop {
 public:
  OpenLoop(const LoadgenOptions& o, const RequestSource& source, const std::string& host, int port,
           std::vector<double> slo_s, LoadgenReport* report)
      : o_(o),
        source_(source),
        host_(host),
        port_(port),
        slo_s_(std::move(slo_s)),
        report_(*report) {}

  // Returns the seconds from the start of the loop until every reply was recorded.
  double Run(const std::vector<PlannedArrival>& arrivals) {
    const Clock::time_point t0 = Clock::now();
    for (size_t i = 0; i < arrivals.size(); ++i) {
      const double at = arrivals[i].at_s;
      for (;;) {
        const double wait_s = at - core::SecondsSince(t0);
        if (wait_s <= 0) break;
        std::this_thread::sleep_for(std::chrono::duration<double>(std::min(wait_s, 0.1)));
        Tick();
      }
      const auto k = static_cast<size_t>(arrivals[i].template_index);
      const uint64_t seed = arrivals[i].seed;
      if (in_flight_.load() >= o_.max_in_flight) {
        std::lock_guard<std::mutex> lock(mu_);
        ++report_.not_sent;
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++report_.sent;
        ++report_.templates[k].sent;
      }
      in_flight_.fetch_add(1);
      Reap();
      auto done = std::make_shared<std::atomic<bool>>(false);
      workers_.push_back({std::thread([this, k, seed, done] {
                            Record(k, Send(host_, port_, source_.Request(k, seed), o_.timeout_s));
                            in_flight_.fetch_sub(1);
                            finished_.fetch_add(1);
                            done->store(true);
                          }),
                          done});
    }
    while (in_flight_.load() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      Tick();
    }
    for (Worker& w : workers_) w.thread.join();
    Tick();
    return core::SecondsSince(t0);
  }

  // The latencies of the 200 replies, in the order they were recorded (after Run).
  const std::deque<double>& latencies() const { return latencies_; }

 private:
  // A request thread; finished ones are joined as arrivals go, so at most about max_in_flight
  // are held however long the run.
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  void Reap() {
    for (Worker& w : workers_) {
      if (w.done->load()) w.thread.join();
    }
    std::erase_if(workers_, [](const Worker& w) { return !w.thread.joinable(); });
  }

  void Tick() {
    if (o_.progress) o_.progress(finished_.load() + report_.not_sent, report_.planned);
  }

  // Counts one reply (or transport error) of template k.
  void Record(size_t k, const Outcome& out) {
    std::lock_guard<std::mutex> lock(mu_);
    if (out.status == 0) {
      ++report_.transport_errors;
    } else {
      ++report_.status_counts[out.status];
    }
    report_.outcomes.push_back({static_cast<int>(k), out.status, out.latency_s});
    if (out.status == 200) {
      ++report_.completed;
      ++report_.templates[k].completed;
      latencies_.push_back(out.latency_s);
      if (slo_s_[k] > 0 && out.latency_s <= o_.slo_scale * slo_s_[k]) {
        ++report_.slo_met;
        ++report_.templates[k].slo_met;
      }
    }
  }

  const LoadgenOptions& o_;
  const RequestSource& source_;
  const std::string& host_;
  const int port_;
  const std::vector<double> slo_s_;
  LoadgenReport& report_;
  std::mutex mu_;  // guards report_ and latencies_
  std::deque<double> latencies_;
  std::atomic<int64_t> finished_{0};
  std::atomic<int> in_flight_{0};
  std::vector<Worker> workers_;
};

}  // namespace

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

core::StatusOr<std::vector<PlannedArrival>> PlanArrivals(const LoadgenOptions& o,
                                                         const RequestSource& source) {
  if (source.Count() == 0) return core::InvalidArgument("mix: got no templates, need at least one");
  std::vector<double> times;
  if (o.trace.empty()) {
    ASSIGN_OR_RETURN(times, ArrivalTimes(o.arrivals, o.rate_rps, o.cv, o.duration_s, o.seed));
  } else {
    for (const TraceArrival& a : o.trace) {
      if (a.template_index < 0 || a.template_index >= static_cast<int>(source.Count())) {
        return core::InvalidArgument(fmt::format("trace: template {} is not in the mix of {}",
                                                 a.template_index, source.Count()));
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
        o.trace.empty() ? Pick(source, u) : static_cast<size_t>(o.trace[i].template_index);
    out.push_back({times[i], static_cast<int>(k), rng.NextU64()});
  }
  return out;
}

core::StatusOr<LoadgenReport> RunLoadgen(const LoadgenOptions& o, const RequestSource& source) {
  std::string host;
  int port = 0;
  RETURN_IF_ERROR(ValidateOptions(o, source, &host, &port));
  ASSIGN_OR_RETURN(const std::vector<PlannedArrival> arrivals, PlanArrivals(o, source));
  RETURN_IF_ERROR(CheckHealthy(host, port, o.url));
  LoadgenReport report;
  RETURN_IF_ERROR(MeasureSolo(o, source, host, port, &report));

  // The SLO reference of each template: given, or its solo latency here.
  std::vector<double> slo_s;
  for (size_t t = 0; t < source.Count(); ++t) {
    slo_s.push_back(!o.reference_solo_s.empty()              ? o.reference_solo_s[t]
                    : report.templates[t].solo_error.empty() ? report.templates[t].solo_latency_s
                                                             : 0.0);
  }
  report.planned = static_cast<int64_t>(arrivals.size());
  OpenLoop loop(o, source, host, port, std::move(slo_s), &report);
  report.wall_s = loop.Run(arrivals);
  report.slo_attainment =
      report.planned > 0 ? static_cast<double>(report.slo_met) / report.planned : 0;
  report.latency_p50_s = Percentile(loop.latencies(), 0.50);
  report.latency_p99_s = Percentile(loop.latencies(), 0.99);
  report.throughput_rps = report.wall_s > 0 ? report.completed / report.wall_s : 0;
  return report;
}

core::Json ToJson(const LoadgenReport& r, const LoadgenOptions& o, std::string_view format) {
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
  return {{"format", format},
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

}  // namespace tessera::serve

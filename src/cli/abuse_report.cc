#include "cli/abuse_report.h"

#include <cstdio>

#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/table.h"

namespace tessera::cli {
namespace {

std::string AbuseStatusText(int status) {
  if (status == serve::kNoReply) return "closed";
  if (status == serve::kTransportError) return "no reply";
  return std::to_string(status);
}

core::Status Verdict(const std::string& what, bool pass, const std::vector<std::string>& failures) {
  if (!pass) {
    std::string why;
    for (const std::string& f : failures) why += (why.empty() ? "" : "; ") + f;
    return core::FailedPrecondition(what + " check failed: " + why);
  }
  std::printf("%s check passed (measured)\n", what.c_str());
  return core::Status::Ok();
}

}  // namespace

core::Status ReportHostile(const serve::HostileOptions& options, const serve::HostileReport& r,
                           const std::string& json_path) {
  core::Table t({"case", "pass", "RSS before", "RSS after", "fds before", "fds after",
                 "what the server did"});
  auto bytes = [](int64_t b) { return b < 0 ? std::string("-") : core::FormatBytes(b); };
  for (const serve::HostileCase& c : r.cases) {
    t.AddRow({c.name, c.pass ? "yes" : "NO", bytes(c.rss_before), bytes(c.rss_after),
              std::to_string(c.fds_before), std::to_string(c.fds_after), c.outcome});
  }
  std::printf("%s", t.Render().c_str());
  std::printf("idle: valid request %.3f s, /healthz %.4f s; server RSS start %s, peak %s, end %s\n",
              r.idle_valid_s, r.idle_healthz_s, bytes(r.rss_start).c_str(),
              bytes(r.rss_peak).c_str(), bytes(r.rss_end).c_str());
  if (!json_path.empty())
    RETURN_IF_ERROR(core::WriteJsonFile(json_path, serve::ToJson(r, options)));
  return Verdict("hostile", r.pass, r.failures);
}

core::Status ReportAbuse(const serve::AbuseReport& r, const core::Json& json,
                         const std::string& json_path) {
  core::Table t({"kind", "group", "expected", "sent", "got", "mismatches"});
  for (const serve::AbuseKindReport& k : r.kinds) {
    std::string got;
    for (const auto& [status, n] : k.got) {
      got += (got.empty() ? "" : ", ") + AbuseStatusText(status) + ": " + std::to_string(n);
    }
    t.AddRow({k.name, k.group, AbuseStatusText(k.expected_status), std::to_string(k.sent), got,
              std::to_string(k.mismatches)});
  }
  std::printf("%s", t.Render().c_str());
  for (const serve::AbuseKindReport& k : r.kinds) {
    for (const std::string& e : k.examples) std::printf("%s: %s\n", k.name.c_str(), e.c_str());
  }
  if (!r.kinds_left_out.empty()) {
    std::string left;
    for (const std::string& k : r.kinds_left_out) left += (left.empty() ? "" : ", ") + k;
    std::printf("left out: %s (the server's budget is unknown or would run them)\n", left.c_str());
  }
  std::printf(
      "sent %lld, mismatches %lld; valid answered %lld of %lld (429 retries %lld); connections "
      "open at once %d (required %d); healthy at the end: %s; %.1f s\n",
      static_cast<long long>(r.sent), static_cast<long long>(r.mismatches),
      static_cast<long long>(r.valid_answered), static_cast<long long>(r.valid_sent),
      static_cast<long long>(r.retried_429), r.max_open_connections, r.connections_required,
      r.healthy_at_end ? "yes" : ("no, " + r.health_detail).c_str(), r.wall_s);
  if (r.rss_sampled) {
    std::string samples;
    for (const serve::RssSample& s : r.rss) {
      samples += (samples.empty() ? "" : ", ") + std::to_string(s.completed) + ":" +
                 core::FormatBytes(s.rss_bytes) + (s.phase == "main" ? "" : " (" + s.phase + ")");
    }
    std::printf("server RSS (cases done: RSS): %s\n", samples.c_str());
    std::printf("RSS end - warm = %lld bytes (bound %s)\n",
                static_cast<long long>(r.rss_end_bytes - r.rss_warm_bytes),
                core::FormatBytes(r.rss_bound_bytes).c_str());
  } else {
    std::printf("server RSS not sampled (give --server-pid)\n");
  }
  if (!json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(json_path, json));
  return Verdict("abuse", r.pass, r.failures);
}

void AddAbuseFlags(CLI::App* c, AbuseCliArgs* a, CommandPaths* paths) {
  c->add_option("--url", a->url, "the server, http://HOST:PORT")->required();
  c->add_option("--requests", a->requests, "cases to send")
      ->transform(Integer(1, serve::kMaxAbuseRequests))
      ->capture_default_str();
  c->add_option("--connections", a->connections, "concurrent connections")
      ->transform(Integer(1, serve::kMaxAbuseConnections))
      ->capture_default_str();
  c->add_option("--seed", a->seed, "seed of the cases")->transform(Seed())->capture_default_str();
  c->add_option("--server-pid", a->server_pid,
                "the server's process id, to sample its RSS (-1: do not sample)")
      ->transform(Integer(-1, int64_t{1} << 22))
      ->capture_default_str();
  c->add_option("--rss-bound", a->rss_bound_bytes,
                "most the server's RSS may grow from the warm-up to the end, e.g. 16MiB")
      ->transform(ByteSize(0, int64_t{1} << 40))
      ->capture_default_str();
  paths->Output(c, "--json", &a->json_path, "write the report as JSON here");
  c->add_flag("--hostile", a->hostile,
              "instead of bad requests: hostile clients of the HTTP layer (slow heads and "
              "bodies, idle connections, header floods, Range, pipelining, half-close, framing, "
              "mid-body disconnects; serve/hostile.h)");
  c->add_option("--cases", a->h.cases, "with --hostile: only these cases (default: all)");
  c->add_option("--slow-sockets", a->h.slow_sockets, "with --hostile: slow-head sockets")
      ->transform(Integer(1, 5000))
      ->capture_default_str();
  c->add_option("--slow-seconds", a->h.slow_seconds, "with --hostile: how long they trickle")
      ->check(Number(1, 3600))
      ->capture_default_str();
  c->add_option("--idle-sockets", a->h.idle_sockets, "with --hostile: idle connections")
      ->transform(Integer(1, 20000))
      ->capture_default_str();
  c->add_option("--idle-seconds", a->h.idle_seconds, "with --hostile: how long they are held")
      ->check(Number(1, 3600))
      ->capture_default_str();
  c->add_option("--flood-bytes", a->h.flood_bytes,
                "with --hostile: header bytes each flooding connection sends, e.g. 48MiB")
      ->transform(ByteSize(1024, int64_t{1} << 32))
      ->capture_default_str();
  c->add_flag("--shutdown", a->h.shutdown,
              "with --hostile and --server-pid: end with SIGTERM during a trickle with a request "
              "in flight (the server exits)");
  c->add_option("--drain-deadline-s", a->h.drain_deadline_s,
                "with --shutdown: the server's drain deadline (it must exit within it + 1 s)")
      ->check(Number(0, 3600))
      ->capture_default_str();
}

core::Status CheckAbuseArgs(const AbuseCliArgs& a) {
  if (a.server_pid == 0) {
    return core::InvalidArgument(
        "server-pid: got 0, must be the server's process id (or -1: do not sample its RSS)");
  }
  return core::Status::Ok();
}

serve::AbuseOptions AbuseOptionsOf(const AbuseCliArgs& a) {
  serve::AbuseOptions o;
  o.url = a.url;
  o.requests = a.requests;
  o.connections = static_cast<int>(a.connections);
  o.seed = a.seed;
  o.server_pid = static_cast<int>(a.server_pid);
  o.rss_bound_bytes = a.rss_bound_bytes;
  return o;
}

core::Status RunHostileFromFlags(const AbuseCliArgs& a, const std::string& valid_path,
                                 const std::string& valid_body) {
  serve::HostileOptions o = a.h;
  o.url = a.url;
  o.server_pid = static_cast<int>(a.server_pid);
  o.valid_path = valid_path;
  o.valid_body = valid_body;
  ASSIGN_OR_RETURN(serve::HostileReport r, serve::RunHostile(o));
  return ReportHostile(o, r, a.json_path);
}

}  // namespace tessera::cli

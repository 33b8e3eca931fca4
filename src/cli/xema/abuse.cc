// `tessera xema abuse`: sends a diffusion server malformed, absurd, oversized and abandoned
// requests with a share of valid ones over many connections (xema/serve/abuse.h), prints a
// table per kind, the RSS samples and the verdict; --json writes the report. Exit 1 when the
// check fails.
#include "xema/serve/abuse.h"

#include <cstdio>
#include <memory>

#include "cli/abuse_report.h"
#include "cli/command.h"
#include "cli/options.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "serve/hostile.h"
#include "xema/serve/request_json.h"

namespace tessera::cli {
namespace {

struct AbuseArgs {
  std::string url;
  int64_t requests = 1000;
  int64_t connections = 200;
  uint64_t seed = 1;
  int64_t server_pid = -1;
  int64_t rss_bound_bytes = int64_t{16} << 20;
  std::string json_path;
  bool hostile = false;
  serve::HostileOptions h;
};

// --hostile: the HTTP-level hostile clients (serve/hostile.h) with a small image request as
// the valid one.
core::Status RunHostileCommand(const AbuseArgs& a) {
  serve::HostileOptions o = a.h;
  o.url = a.url;
  o.server_pid = static_cast<int>(a.server_pid);
  o.valid_path = xema::GenerationRoute(xema::GenerationKind::kImage);
  o.valid_body = R"({"model": "tiny-t2i", "prompt": "a hostile client", "size": "16x16", )"
                 R"("num_inference_steps": 1, "seed": 1})";
  ASSIGN_OR_RETURN(serve::HostileReport r, serve::RunHostile(o));
  return ReportHostile(o, r, a.json_path);
}

core::Status RunAbuseCommand(const AbuseArgs& a) {
  if (a.server_pid == 0) {
    return core::InvalidArgument(
        "server-pid: got 0, must be the server's process id (or -1: do not sample its RSS)");
  }
  if (a.hostile) return RunHostileCommand(a);
  xema::AbuseOptions o;
  o.url = a.url;
  o.requests = a.requests;
  o.connections = static_cast<int>(a.connections);
  o.seed = a.seed;
  o.server_pid = static_cast<int>(a.server_pid);
  o.rss_bound_bytes = a.rss_bound_bytes;
  std::unique_ptr<core::ProgressBar> bar;
  o.progress = [&bar](int64_t done, int64_t total) {
    if (!bar) bar = std::make_unique<core::ProgressBar>("xema abuse", total);
    bar->Update(done);
  };
  ASSIGN_OR_RETURN(xema::AbuseReport r, xema::RunAbuse(o));
  if (bar) bar->Done();
  return ReportAbuse(r, xema::ToJson(r, o), a.json_path);
}

}  // namespace

void AddXemaAbuse(CLI::App* xema, Action* action) {
  auto a = std::make_shared<AbuseArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = xema->add_subcommand(
      "abuse", "Send a diffusion server bad, huge and abandoned requests; check it survives");
  c->add_option("--url", a->url, "the server, http://HOST:PORT")->required();
  c->add_option("--requests", a->requests, "cases to send")
      ->transform(Integer(1, xema::kMaxAbuseRequests))
      ->capture_default_str();
  c->add_option("--connections", a->connections, "concurrent connections")
      ->transform(Integer(1, xema::kMaxAbuseConnections))
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
  c->callback(
      [action, a, paths] { *action = Checked(paths, [a] { return RunAbuseCommand(*a); }); });
}

}  // namespace tessera::cli

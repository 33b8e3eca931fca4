// `tessera xema serve`: runs the diffusion server (xema/serve/server.h) until Ctrl-C /
// SIGTERM, --max-requests replies or --duration-s seconds, then stops it gracefully and prints
// the reply counts.
#include <csignal>
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/xema/request_options.h"
#include "core/byte_size.h"
#include "serve/http_options.h"
#include "xema/serve/request_json.h"
#include "xema/serve/server.h"

namespace tessera::cli {
namespace {

struct ServeArgs {
  std::string host = "127.0.0.1";
  int64_t port = 8000;
  std::string policy = "none";
  int64_t budget_bytes = int64_t{2} << 30;
  int64_t devices = 1;
  int64_t queue = 64;
  int64_t max_requests = 0;
  double duration_s = 0;
  std::string plan_path;     // --plan: mitigation plans made offline
  std::string warm_up_path;  // --warm-up: templates planned before serving
  OffloadArgs link;          // the host link of offload, caching and xema (its offload list unused)
  serve::HttpOptions http;   // the HTTP shell's limits (host and port above)
  int64_t max_body_bytes = 64 * 1024;
};

volatile std::sig_atomic_t g_interrupted = 0;
void OnSignal(int) { g_interrupted = 1; }

core::Status RunServe(const ServeArgs& a) {
  xema::ServerOptions o;
  o.host = a.host;
  o.port = static_cast<int>(a.port);
  ASSIGN_OR_RETURN(o.policy, xema::ParseMemoryPolicy(a.policy));
  o.budget_bytes = a.budget_bytes;
  o.devices = static_cast<int>(a.devices);
  o.queue_capacity = static_cast<int>(a.queue);
  o.max_requests = a.max_requests;
  o.duration_s = a.duration_s;
  o.http = a.http;
  o.max_body_bytes = a.max_body_bytes;
  if (!a.plan_path.empty()) {
    ASSIGN_OR_RETURN(const core::Json table, core::ReadJsonFile(a.plan_path));
    if (xema::IsServingPlanJson(table)) {
      ASSIGN_OR_RETURN(xema::ServingPlan plan, xema::ServingPlanFromJson(table, a.plan_path));
      o.serving_plan = std::make_shared<const xema::ServingPlan>(std::move(plan));
      o.serving_plan_source = a.plan_path;
    } else {
      ASSIGN_OR_RETURN(o.plans, xema::PlanTableFromJson(table, a.plan_path, a.budget_bytes));
    }
  }
  if (!a.warm_up_path.empty()) {
    ASSIGN_OR_RETURN(const core::Json list, core::ReadJsonFile(a.warm_up_path));
    ASSIGN_OR_RETURN(o.warm_up, xema::WarmUpFromJson(list, a.warm_up_path));
  }
  o.host_gbps = a.link.host_gbps;
  o.time_scale = a.link.time_scale;
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-reply is an error return, not a signal
  ASSIGN_OR_RETURN(std::unique_ptr<xema::DiffusionServer> server, xema::DiffusionServer::Start(o));
  g_interrupted = 0;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::printf(
      "serving on %s (policy %s, budget %s per device, %d device%s, queue %d); "
      "Ctrl-C stops\n",
      server->url().c_str(),
      o.serving_plan != nullptr ? ("plan " + a.plan_path).c_str() : a.policy.c_str(),
      core::FormatBytes(a.budget_bytes).c_str(), o.devices, o.devices == 1 ? "" : "s",
      o.queue_capacity);
  std::fflush(stdout);
  server->Wait([] { return g_interrupted != 0; });
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  const core::Json m = server->Metrics();
  std::printf("stopped after %lld replies: status %s, latency p50 %.3f s p99 %.3f s\n",
              static_cast<long long>(m["requests"].get<int64_t>()), m["status"].dump().c_str(),
              m["latency_p50_s"].get<double>(), m["latency_p99_s"].get<double>());
  return core::Status::Ok();
}

}  // namespace

void AddXemaServe(CLI::App* xema, Action* action) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* c = xema->add_subcommand(
      "serve", "Serve OpenAI-style image/video generation over HTTP under a memory budget");
  c->add_option("--host", a->host, "address to listen on")->capture_default_str();
  c->add_option("--port", a->port, "TCP port (0: any free port)")
      ->transform(Integer(0, 65535))
      ->capture_default_str();
  c->add_option("--policy", a->policy,
                "memory policy: none, static, offload, tiling, caching or xema")
      ->capture_default_str();
  c->add_option("--budget", a->budget_bytes, "device memory budget per device, e.g. 512MiB")
      ->transform(ByteSize(1, core::kMaxByteSize))
      ->capture_default_str();
  c->add_option("--devices", a->devices, "serving devices (one request at a time each)")
      ->transform(Integer(1, xema::kMaxServeDevices))
      ->capture_default_str();
  c->add_option("--queue", a->queue, "requests that may wait for a device (then 429)")
      ->transform(Integer(1, xema::kMaxServeQueue))
      ->capture_default_str();
  c->add_option("--max-requests", a->max_requests,
                "stop after this many generation replies (0: never)")
      ->transform(Integer(0, int64_t{1} << 40))
      ->capture_default_str();
  c->add_option("--duration-s", a->duration_s, "stop after this many seconds (0: never)")
      ->check(Number(0, 1e7))
      ->capture_default_str();
  c->add_option("--max-body-bytes", a->max_body_bytes,
                "largest request body (decoded), e.g. 64KiB; past it 413")
      ->transform(ByteSize(1024, int64_t{1} << 30))
      ->capture_default_str();
  c->add_option("--header-deadline-s", a->http.header_deadline_s,
                "a request head must arrive within this long of the connection opening or of "
                "the previous reply (then 408)")
      ->check(Number(0.001, 3600))
      ->capture_default_str();
  c->add_option("--body-deadline-s", a->http.body_deadline_s,
                "a request body must arrive within this long of its head (then 408)")
      ->check(Number(0.001, 3600))
      ->capture_default_str();
  c->add_option("--max-header-bytes", a->http.max_header_bytes,
                "largest request head (request line and headers); past it 431")
      ->transform(ByteSize(1024, int64_t{1} << 20))
      ->capture_default_str();
  c->add_option("--max-header-count", a->http.max_header_count,
                "most header fields in a request; past it 431")
      ->transform(Integer(8, 10000))
      ->capture_default_str();
  c->add_option("--max-connections", a->http.max_connections,
                "most open connections; past it a new one gets 503 with Retry-After")
      ->transform(Integer(1, 1000000))
      ->capture_default_str();
  c->add_option("--drain-deadline-s", a->http.drain_deadline_s,
                "on Ctrl-C / SIGTERM: how long requests being handled may take to finish")
      ->check(Number(0, 3600))
      ->capture_default_str();
  AddHostLinkOptions(c, &a->link);
  auto paths = std::make_shared<CommandPaths>();
  paths->Input(c, "--plan", &a->plan_path,
               "a plan table of xema plan (then --policy is unused), or mitigation plans made "
               "offline (xema mitigate --json; one plan or an array; caching and xema only)");
  paths->Input(c, "--warm-up", &a->warm_up_path,
               "generation bodies (a JSON array, as POSTed) whose templates are profiled and "
               "planned before serving instead of in their first request");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunServe(*a); }); });
}

}  // namespace tessera::cli

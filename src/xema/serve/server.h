// DiffusionServer: an HTTP server (the serving core's, Boost.Beast) that runs the tiny diffusion
// pipeline for OpenAI-style generation requests on D serving devices under a memory policy.
//
// Endpoints:
//   POST /v1/images/generations, /v1/videos/generations  body: request_json.h
//   GET  /v1/metrics  replies per status, queue length, in flight, p50 / p99 latency,
//                     per device live / peak / peak reserved bytes, templates planned;
//                     with a serving plan the template misses and "batch_mates" (requests
//                     run in another request's pass)
//   GET  /healthz     {"status": "ok"} (503 while stopping)
// A generation reply (200): {"data": [{"b64_json": PNG}, ...] (one per frame; [] with
// response_format "none"), "latency_s" (arrival to reply), "queue_s", "peak_bytes" (peak
// live device bytes of the run), "template_hit", "template", "policy", "device"}.
// Errors: {"error": {"message": one line, "code": status}} with
//   400 a bad body (the field named; also a body cut short or badly framed), 413 a body over
//       max_body_bytes (Content-Length or chunked; gzip / brotli bodies count decoded bytes),
//       415 a Content-Encoding other than gzip, deflate, br or a Content-Type that is not
//       JSON, 404 an unknown route (method + path), 414 a request line over 8 KiB, 400 a
//       malformed request line or conflicting framing, 408 a head or body past its deadline,
//       431 too many or too large headers, 503 past the connection cap (the shell's limits:
//       serve/http_options.h),
//   429 the queue is full, 503 stopping or the request's deadline_s passed while queued,
//   507 the request cannot fit the budget (MinimumPeakBytes above it: refused before
//       queueing; out of device memory while running; a static arena above the budget),
//   500 anything else (a replay that diverged).
//
// Execution: on the serving core (serve/server.h). Handlers (a pool of http_threads) parse,
// check and enqueue into one bounded FIFO queue (queue_capacity) and wait for the reply (slow
// or idle connections hold no handler: the shell reads on one I/O thread); the
// core's admission starts the queue's head on a device and each device's worker threads (one
// BLAS thread each) run it. MemoryPolicyServer (memory_policy_server.h): D ServeDevices, one
// request at a time per device, the head on the idle device of lowest index.
// PlannedServer (planned_server.h): D PlannedDevices under a serving plan (PlanAdmission,
// batching, SP gangs). Every request is bounded: body size, prompt length and sizes
// (ValidateRequest), and the budget. The HTTP shell (serve/http_server.h) listens with a
// backlog of SOMAXCONN and never lets a request end the process.
// Survival under abuse is tested by abuse.h (bad requests, disconnects, 200 connections, RSS).
//
// Planning before serving: what can be known before the first request is planned in Start,
// before the listener opens: a serving plan's entries are recorded and laid out
// (RecordPlanEntries); mitigation plans made offline (options.plans) are loaded; the templates
// of options.warm_up are planned on device 0 (ServeDevice::Prepare: their mitigations profiled
// under caching and xema, their static arena recorded and laid out under static). Lazy path: a
// template the server could not know (not in options.plans or options.warm_up) is planned
// inline by the first request of it (its reply says template_hit false), later ones reuse the
// plan; under a serving plan a template missing from the table is routed (covered or fallback)
// and never planned at request time.
//
// Stopping: Stop() (also from Wait() when max_requests replies were sent, duration_s passed or
// `interrupted` returned true) refuses new requests with 503, lets the devices finish every
// request already queued or running, answers them, then closes the listener. Idempotent; the
// destructor calls it.
// Thread-safety: all public methods may be called from any thread (Stop not from a handler).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "serve/reply.h"
#include "serve/server.h"
#include "xema/serve/diffusion_job.h"
#include "xema/serve/memory_policy.h"
#include "xema/serve/plan_table.h"
#include "xema/serve/request_json.h"
#include "xema/serve/serve_device.h"
#include "xema/serve/serving_plan.h"

namespace tessera::xema {

inline constexpr int kMaxServeDevices = 64;
inline constexpr int kMaxServeQueue = 100000;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (see port())
  MemoryPolicy policy = MemoryPolicy::kNone;
  int64_t budget_bytes = 0;  // per device, > 0
  int devices = 1;           // [1, kMaxServeDevices]
  int queue_capacity = 16;   // [1, kMaxServeQueue] requests waiting for a device
  int64_t max_requests = 0;  // stop after this many generation replies; 0: never
  double duration_s = 0;     // stop after this long; 0: never
  int64_t max_body_bytes = 64 * 1024;
  int http_threads = 64;
  // The HTTP shell's other limits (serve/http_options.h: head and body deadlines, header bytes
  // and count, connections, the drain deadline); its host, port, max_body_bytes and
  // http_threads are the fields above.
  serve::HttpOptions http;
  // The host link of the policies with a host tier (UsesHostTier): host_gbps GB/s per
  // direction at the time scale time_scale (0: measured once at Start, host_tier.h).
  double host_gbps = kH100Pcie5HostGbps;
  double time_scale = 0;
  // Mitigation plans made offline (plan_table.h), loaded before the first request; caching
  // and xema only (InvalidArgument for another policy).
  std::vector<PlannedTemplate> plans;
  // A serving plan (serving_plan.h, `serve --plan` with a plan table of xema plan): when set,
  // it decides the memory control and concurrency of every template (policy is then unused,
  // reported "plan"); each device runs up to SlotsPerDevice() runs at once (per entry up to
  // its concurrency; a run of an entry of batch b takes up to b waiting requests of it into one
  // pass, BatchMates), its threads pinned to one core (the host's last cores, device 0 on the
  // last; unpinned when the devices outnumber the cores); templates missing from the table are
  // routed to a covering entry or the fallback, logged on stderr and counted in /v1/metrics
  // ("template_misses").
  std::shared_ptr<const ServingPlan> serving_plan;
  std::string serving_plan_source = "plan";  // names the table in messages
  // Templates planned in Start, before the first request (memory policies only; the prompt
  // and seed of each are unused): see "Planning before serving".
  std::vector<DiffusionRequest> warm_up;
  // Test hook: called by a device's worker before it runs each request (once per batch).
  std::function<void(int device)> before_run;
};

// InvalidArgument naming the first bad option (budget x devices above 80% of the host's
// available memory included: runs allocate real memory).
core::Status ValidateServerOptions(const ServerOptions& options);

// The common part of Xema's two servers (memory_policy_server.h, planned_server.h): the
// generation routes and replies, /v1/metrics, and the serving core (serve/server.h) they run
// on. Start is the factory: a PlannedServer when options.serving_plan is set, else a
// MemoryPolicyServer.
class DiffusionServer {
 public:
  // Binds (Unavailable when the address cannot be bound), prepares the devices (and plans the
  // templates known in advance, see the file comment) and starts the listener and the device
  // workers.
  static core::StatusOr<std::unique_ptr<DiffusionServer>> Start(const ServerOptions& options);
  virtual ~DiffusionServer();
  DiffusionServer(const DiffusionServer&) = delete;
  DiffusionServer& operator=(const DiffusionServer&) = delete;

  int port() const { return core_->port(); }
  std::string url() const;  // "http://HOST:PORT"

  // Blocks until a stop condition (see the file comment), then Stop(). `interrupted` (may be
  // empty) is polled every 50 ms.
  void Wait(const std::function<bool()>& interrupted = {});
  void Stop();

  core::Json Metrics() const;
  int64_t queue_length() const { return core_->queue_length(); }

 protected:
  explicit DiffusionServer(const ServerOptions& options) : options_(options) {}
  // Binds the serving core (slots_per_device worker threads per device) and adds the
  // generation and metrics routes.
  core::Status Bind(int slots_per_device = 1);
  // Runs a pass of `job` and its batch mates on `device` (each one past its deadline answered
  // 503 instead; nothing runs when all are) and gives each request its slice of the output.
  void RunPass(DiffusionJob& job, int device,
               const std::function<core::StatusOr<DeviceRun>()>& execute);

  // The policy named in replies and metrics.
  virtual std::string PolicyName() const = 0;
  // The policy whose strongest mitigations bound a request's least peak (refused above it).
  virtual MemoryPolicy StrongestPolicy() const = 0;
  // Called on the handler thread before `job` is queued (a serving plan routes it).
  virtual void RouteJob(DiffusionJob& /*job*/) {}
  // Adds the system's fields to a 200 reply and to /v1/metrics.
  virtual void AddReplyFields(const DiffusionJob& /*job*/, core::Json& /*body*/) const {}
  virtual void AddMetrics(core::Json& metrics) const = 0;

  ServerOptions options_;
  std::unique_ptr<serve::Server> core_;

 private:
  serve::Reply Generate(GenerationKind kind, const std::string& body);
};

}  // namespace tessera::xema

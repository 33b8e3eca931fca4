// DiffusionServer: an HTTP server (cpp-httplib) that runs the tiny diffusion pipeline for
// OpenAI-style generation requests on D serving devices under a memory policy.
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
//       max_body_bytes (Content-Length, chunked or until close; gzip / brotli bodies count
//       decoded bytes), 415 a Content-Encoding other than gzip, deflate, br, 404 an unknown route
//       (method + path), 414 a request line over 8 KiB, 400 a malformed request line,
//   429 the queue is full, 503 stopping or the request's deadline_s passed while queued,
//   507 the request cannot fit the budget (MinimumPeakBytes above it: refused before
//       queueing; out of device memory while running; a static arena above the budget),
//   500 anything else (a replay that diverged).
//
// Execution: handlers (a pool of http_threads) parse, check and enqueue into one bounded
// FIFO queue (queue_capacity) and wait for the reply; each device is a worker thread with
// one BLAS thread that takes the oldest request and runs it on its ServeDevice (one request
// at a time per device). Every request is bounded: body size, prompt length and sizes
// (ValidateRequest), and the budget. The listen backlog is SOMAXCONN (cpp-httplib's 5 would
// drop the SYNs of a burst of clients). No request can end the process: replies are dumped
// with invalid UTF-8 replaced, and the error handler (outside cpp-httplib's try) never throws.
// Survival under abuse is tested by abuse.h (bad requests, disconnects, 200 connections, RSS).
//
// Stopping: Stop() (also from Wait() when max_requests replies were sent, duration_s passed or
// `interrupted` returned true) refuses new requests with 503, lets the devices finish every
// request already queued or running, answers them, then closes the listener. Idempotent; the
// destructor calls it.
// Thread-safety: all public methods may be called from any thread (Stop not from a handler).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/serve/memory_policy.h"
#include "xema/serve/plan_admission.h"
#include "xema/serve/plan_table.h"
#include "xema/serve/planned_device.h"
#include "xema/serve/request_json.h"
#include "xema/serve/serve_device.h"
#include "xema/serve/serve_metrics.h"
#include "xema/serve/serving_plan.h"

namespace httplib {
class Server;
}

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
  // Test hook: called by a device's worker before it runs each request (once per batch).
  std::function<void(int device)> before_run;
};

// InvalidArgument naming the first bad option (budget x devices above 80% of the host's
// available memory included: runs allocate real memory).
core::Status ValidateServerOptions(const ServerOptions& options);

class DiffusionServer {
 public:
  // Binds (Unavailable when the address cannot be bound) and starts the listener and the
  // device workers.
  static core::StatusOr<std::unique_ptr<DiffusionServer>> Start(const ServerOptions& options);
  ~DiffusionServer();
  DiffusionServer(const DiffusionServer&) = delete;
  DiffusionServer& operator=(const DiffusionServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // "http://HOST:PORT"

  // Blocks until a stop condition (see the file comment), then Stop(). `interrupted` (may be
  // empty) is polled every 50 ms.
  void Wait(const std::function<bool()>& interrupted = {});
  void Stop();

  core::Json Metrics() const;
  int64_t queue_length() const;

 private:
  struct Reply {
    int status = 200;
    core::Json body;
  };
  struct Job;

  explicit DiffusionServer(const ServerOptions& options);
  Reply Generate(GenerationKind kind, const std::string& body);
  void Work(int device);
  void WorkPlanned(int device);
  // Serving plan: admits queued jobs to devices in FCFS order while the head fits (mu_ held).
  void DispatchLocked();
  // Runs a dequeued job on `device` (its deadline checked first) and records the outcome.
  void RunJob(Job& job, int device, const std::function<core::StatusOr<DeviceRun>()>& execute);
  void RequestStop();

  ServerOptions options_;
  int port_ = 0;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  TemplateCache templates_;
  std::vector<std::unique_ptr<ServeDevice>> devices_;
  std::vector<std::thread> workers_;
  // With a serving plan (the devices_ above are then empty).
  std::unique_ptr<PlanRecordings> recordings_;
  std::vector<std::unique_ptr<PlannedDevice>> planned_;
  std::unique_ptr<PlanAdmission> admission_;  // guarded by mu_
  // Per device, admitted (job, SP member: a gang's job is in the ready queue of each of its
  // devices); guarded by mu_.
  std::vector<std::deque<std::pair<std::shared_ptr<Job>, int>>> ready_;
  std::atomic<int64_t> misses_covered_{0};
  std::atomic<int64_t> batch_mates_{0};  // requests run in another request's pass
  std::atomic<int64_t> misses_fallback_{0};
  ServeMetrics metrics_;

  mutable std::mutex mu_;  // guards the queue and the flags below
  std::condition_variable work_cv_;
  std::condition_variable stop_cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  int in_flight_ = 0;
  bool accepting_ = true;
  bool workers_exit_ = false;
  bool stop_requested_ = false;
  std::mutex stop_mu_;  // serialises Stop()
  bool stopped_ = false;
};

}  // namespace tessera::xema

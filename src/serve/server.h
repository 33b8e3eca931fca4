// Server: the serving core a system's server is built on: an HttpServer (http_server.h:
// listener, limits, error replies) and a JobRunner (job_runner.h: bounded queue, admission,
// device workers, batching), with the metrics of its job replies (serve_metrics.h), GET
// /healthz and the stop conditions. The system adds its routes (http()), parses requests into
// jobs, Submits them and waits for each job's `done`, and Records every reply of its job routes.
//
//   GET /healthz  {"status": "ok"} (200), {"status": "stopping"} (503) once stopping.
//   Submit        queues a job, or answers 503 "server is stopping" / 429 "queue full: N
//                 requests waiting, retry later".
//   Metrics       ServeMetrics::ToJson plus "queue_length", "in_flight" and "queue_capacity".
//
// Stopping: Stop() (also from Wait() when max_requests replies were Recorded, duration_s
// seconds passed or `interrupted` returned true) stops accepting connections, refuses new
// jobs with 503, lets the workers finish every job already queued or running (their handlers
// answer them) within http.drain_deadline_s of the start of the stop, then closes every
// connection (a request still running past the deadline is answered 503 and its job left to
// end on its own); Stop always returns. Idempotent; the destructor calls it.
// Errors: Bind returns Unavailable when the address cannot be bound.
// Thread-safety: all public methods may be called from any thread (Stop not from a handler or
// an executor); Start once, after the routes are added.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/json_util.h"
#include "core/status.h"
#include "serve/admission.h"
#include "serve/http_server.h"
#include "serve/job_runner.h"
#include "serve/reply.h"
#include "serve/serve_metrics.h"

namespace tessera::serve {

struct ServerOptions {
  HttpOptions http;
  RunnerOptions runner;
  int64_t max_requests = 0;  // stop after this many Recorded replies; 0: never
  double duration_s = 0;     // Wait stops after this long; 0: never
};

class Server {
 public:
  // Binds the listener; nothing is served before Start.
  static core::StatusOr<std::unique_ptr<Server>> Bind(const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  HttpServer& http() { return *http_; }

  // Starts the device workers (JobRunner with `admission`, `executor`, `setup`), adds GET
  // /healthz and starts listening.
  void Start(std::unique_ptr<Admission> admission, JobRunner::Executor executor,
             JobRunner::WorkerSetup setup = {});

  // nullopt when `job` was queued (it is answered through job->done), else the error reply.
  std::optional<Reply> Submit(std::shared_ptr<Job> job);
  // Counts one reply of a job route (ServeMetrics::Record); the max_requests-th stops Wait.
  void Record(int status, double latency_s, bool template_hit);

  // Blocks until a stop condition (see the file comment), then Stop(). `interrupted` (may be
  // empty) is polled every 50 ms.
  void Wait(const std::function<bool()>& interrupted = {});
  void Stop();

  core::Json Metrics() const;
  int64_t queue_length() const;
  int64_t batch_mates() const;
  int port() const { return http_->port(); }
  std::string url() const { return http_->url(); }
  const ServerOptions& options() const { return options_; }

 private:
  explicit Server(const ServerOptions& options) : options_(options) {}
  void RequestStop();

  ServerOptions options_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<JobRunner> runner_;
  ServeMetrics metrics_;

  std::mutex mu_;  // guards stop_requested_
  std::condition_variable stop_cv_;
  bool stop_requested_ = false;
  std::mutex stop_mu_;  // serialises Stop()
  bool stopped_ = false;
  bool runner_abandoned_ = false;  // its jobs outran the drain deadline
};

}  // namespace tessera::serve

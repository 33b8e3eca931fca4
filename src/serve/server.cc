#include "serve/server.h"

#include <fmt/format.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "core/elapsed.h"

namespace tessera::serve {

core::StatusOr<std::unique_ptr<Server>> Server::Bind(const ServerOptions& options) {
  std::unique_ptr<Server> s(new Server(options));
  ASSIGN_OR_RETURN(s->http_, HttpServer::Bind(options.http));
  return s;
}

namespace {

// Runners abandoned past the drain deadline: never destroyed (their workers still run a job,
// and destroying a runner joins them), kept reachable so that the process can exit.
void KeepAbandoned(std::unique_ptr<JobRunner> runner) {
  static std::mutex mu;
  static auto* abandoned = new std::vector<std::unique_ptr<JobRunner>>;
  std::lock_guard<std::mutex> lock(mu);
  abandoned->push_back(std::move(runner));
}

}  // namespace

Server::~Server() {
  Stop();
  if (runner_abandoned_) KeepAbandoned(std::move(runner_));
}

void Server::Start(std::unique_ptr<Admission> admission, JobRunner::Executor executor,
                   JobRunner::WorkerSetup setup) {
  runner_ = std::make_unique<JobRunner>(options_.runner, std::move(admission), std::move(executor),
                                        std::move(setup));
  runner_->Start();
  http_->Get("/healthz", [this]() -> Reply {
    const bool ok = runner_->accepting();
    return {ok ? 200 : 503, {{"status", ok ? "ok" : "stopping"}}};
  });
  http_->Listen();
}

std::optional<Reply> Server::Submit(std::shared_ptr<Job> job) {
  switch (runner_->Submit(std::move(job))) {
    case JobRunner::SubmitResult::kQueued:
      return std::nullopt;
    case JobRunner::SubmitResult::kStopping:
      return ErrorReply(503, "server is stopping");
    case JobRunner::SubmitResult::kFull:
      break;
  }
  return ErrorReply(429, fmt::format("queue full: {} requests waiting, retry later",
                                     options_.runner.queue_capacity));
}

void Server::Record(int status, double latency_s, bool template_hit) {
  metrics_.Record(status, latency_s, template_hit);
  if (options_.max_requests > 0 && metrics_.replies() >= options_.max_requests) RequestStop();
}

void Server::RequestStop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_requested_ = true;
  stop_cv_.notify_all();
}

void Server::Wait(const std::function<bool()>& interrupted) {
  const Clock::time_point t0 = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_requested_) {
    if (options_.duration_s > 0 && core::SecondsSince(t0) >= options_.duration_s) break;
    if (interrupted && interrupted()) break;
    stop_cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
  lock.unlock();
  Stop();
}

void Server::Stop() {
  std::lock_guard<std::mutex> stop_lock(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  RequestStop();
  if (http_ != nullptr) http_->StopAccepting();  // no new connections
  if (runner_ != nullptr) {
    // Refuses new jobs and answers the queued ones, within the drain deadline: past it the
    // runner is abandoned (its workers keep running; ~Server leaks it) so that Stop returns.
    JobRunner* runner = runner_.get();
    auto drained = std::make_shared<std::promise<void>>();
    std::future<void> done = drained->get_future();
    std::thread drainer([runner, drained] {
      runner->Drain();
      drained->set_value();
    });
    if (done.wait_for(std::chrono::duration<double>(options_.http.drain_deadline_s)) ==
        std::future_status::ready) {
      drainer.join();
    } else {
      drainer.detach();
      runner_abandoned_ = true;
    }
  }
  // Handlers have their replies (the I/O thread writes them, within the drain deadline), then
  // every connection closes.
  if (http_ != nullptr) http_->Stop();
}

core::Json Server::Metrics() const {
  core::Json j = metrics_.ToJson();
  j["queue_length"] = queue_length();
  j["in_flight"] = runner_ != nullptr ? runner_->in_flight() : 0;
  j["queue_capacity"] = options_.runner.queue_capacity;
  if (http_ != nullptr) j["http"] = http_->Counters();
  return j;
}

int64_t Server::queue_length() const { return runner_ != nullptr ? runner_->queue_length() : 0; }

int64_t Server::batch_mates() const { return runner_ != nullptr ? runner_->batch_mates() : 0; }

}  // namespace tessera::serve

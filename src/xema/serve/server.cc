#include "xema/serve/server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <future>
#include <optional>
#include <tuple>

#include "comm/in_process_communicator.h"
#include "core/cpu_affinity.h"
#include "core/elapsed.h"
#include "kernels/gemm.h"
#include "xema/pipeline/template_check.h"
#include "xema/serve/base64.h"
#include "xema/serve/png.h"

namespace tessera::xema {
namespace {

using Clock = std::chrono::steady_clock;

core::Json ErrorBody(int status, const std::string& message) {
  return {{"error", {{"message", message}, {"code", status}}}};
}

int HttpStatus(const core::Status& s) {
  switch (s.code()) {
    case core::StatusCode::kInvalidArgument:
      return 400;
    case core::StatusCode::kInfeasible:
      return 507;
    case core::StatusCode::kDeadlineExceeded:
    case core::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

}  // namespace

struct DiffusionServer::Job {
  GenerationRequest request;
  Clock::time_point arrival;
  std::promise<void> done;
  // Set by the worker before `done`.
  core::Status status;
  DeviceRun run;
  double queue_s = 0;
  int device = -1;
  // With a serving plan: the route, and the admission once admitted.
  Route route;
  Admission admission;
  // An SP gang (admission.span > 1): its members' communicator, the members still running
  // and the first error of a member other than 0 (member 0's is `status`); guarded by mu_.
  std::shared_ptr<comm::InProcessWorld> world;
  int members_left = 1;
  core::Status member_status;
  // Requests run in this one's pass (an entry of batch > 1: BatchMates), answered with it.
  std::vector<std::shared_ptr<Job>> mates;
};

DiffusionServer::DiffusionServer(const ServerOptions& options)
    : options_(options), http_(std::make_unique<httplib::Server>()) {}

core::StatusOr<std::unique_ptr<DiffusionServer>> DiffusionServer::Start(
    const ServerOptions& options) {
  RETURN_IF_ERROR(ValidateServerOptions(options));
  std::unique_ptr<DiffusionServer> s(new DiffusionServer(options));
  httplib::Server& http = *s->http_;
  const int threads = options.http_threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http.set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  http.set_read_timeout(5, 0);
  http.set_write_timeout(5, 0);
  DiffusionServer* self = s.get();
  // Never throws: an error message may echo bytes of the request that are not UTF-8 (a path
  // of %FF), which nlohmann's default dump refuses; they become U+FFFD.
  auto json_reply = [](httplib::Response& res, int status, const core::Json& body) {
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, core::Json::error_handler_t::replace),
                    "application/json");
  };
  // The body is read here rather than by cpp-httplib, so that the limit holds for every
  // framing: with Content-Length cpp-httplib answers 413 before reading; chunked and
  // read-until-close bodies it reads without a limit; gzip and brotli bodies it decodes, and the
  // limit must bound the decoded bytes (a 64 KiB gzip body can decode to 64 MiB).
  const auto max_body = static_cast<size_t>(options.max_body_bytes);
  for (GenerationKind kind : {GenerationKind::kImage, GenerationKind::kVideo}) {
    http.Post(GenerationRoute(kind), [self, kind, json_reply, max_body](
                                         const httplib::Request& req, httplib::Response& res,
                                         const httplib::ContentReader& read) {
      // cpp-httplib decodes gzip, deflate and br and passes any other coding through as if
      // it were none; refuse it instead of parsing encoded bytes as JSON.
      const std::string coding = req.get_header_value("Content-Encoding");
      if (!coding.empty() && coding != "identity" && coding != "gzip" && coding != "deflate" &&
          coding != "br") {
        json_reply(res, 415,
                   ErrorBody(415, "Content-Encoding: got '" + core::Utf8Prefix(coding, 40) +
                                      "', must be gzip, deflate, br or none"));
        return;
      }
      std::string body;
      bool too_large = false;
      const bool read_ok = read([&](const char* data, size_t n) {
        too_large = body.size() + n > max_body;
        if (!too_large) body.append(data, n);
        return !too_large;
      });
      if (too_large || res.status == 413) {
        json_reply(res, 413,
                   ErrorBody(413, fmt::format("body too large: more than {} bytes", max_body)));
      } else if (!read_ok) {
        // 415 (an unknown Content-Encoding) as cpp-httplib set it; 400 otherwise.
        const int status = res.status == 415 ? 415 : 400;
        json_reply(res, status,
                   ErrorBody(status, status == 415 ? "unsupported Content-Encoding"
                                                   : "the body could not be read (cut short, "
                                                     "bad chunked framing or bad compression)"));
      } else {
        Reply r = self->Generate(kind, body);
        json_reply(res, r.status, r.body);
      }
    });
  }
  http.Get("/v1/metrics", [self, json_reply](const httplib::Request&, httplib::Response& res) {
    json_reply(res, 200, self->Metrics());
  });
  http.Get("/healthz", [self, json_reply](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(self->mu_);
    json_reply(res, self->accepting_ ? 200 : 503,
               {{"status", self->accepting_ ? "ok" : "stopping"}});
  });
  // cpp-httplib calls this outside its handler try block: an exception here would end the
  // process, so none may leave it.
  http.set_error_handler([json_reply](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    try {
      std::string why = res.status == 404   ? "no such route: " + req.method + " " + req.path
                        : res.status == 413 ? "body too large"
                                            : "bad request";
      if (why.size() > 200) why = core::Utf8Prefix(why, 200) + "...";
      json_reply(res, res.status, ErrorBody(res.status, why));
    } catch (...) {
      res.set_content(
          "{\"error\": {\"message\": \"error\", \"code\": " + std::to_string(res.status) + "}}",
          "application/json");
    }
  });

  // cpp-httplib listens with a backlog of 5: a burst of connections (200 clients at once)
  // overflows it, the kernel drops their SYNs and the clients wait 1 s, 3 s, ... to retry.
  // Listening again on the bound socket raises the backlog (Linux updates it in place).
  auto listen_fd = std::make_shared<int>(-1);
  http.set_socket_options([listen_fd](int sock) {
    httplib::default_socket_options(sock);
    *listen_fd = sock;
  });
  s->port_ = options.port == 0
                 ? http.bind_to_any_port(options.host)
                 : (http.bind_to_port(options.host, options.port) ? options.port : -1);
  if (s->port_ <= 0) {
    return core::Unavailable(fmt::format("cannot listen on {}:{}: address in use or not allowed",
                                         options.host, options.port));
  }
  if (*listen_fd >= 0 && ::listen(*listen_fd, SOMAXCONN) != 0) {
    return core::Unavailable(fmt::format("cannot listen on {}:{} with a backlog of {}",
                                         options.host, s->port_, SOMAXCONN));
  }
  if (options.serving_plan != nullptr) {
    const ServingPlan& plan = *options.serving_plan;
    const std::string& src = options.serving_plan_source;
    RETURN_IF_ERROR(CheckPlanDevice(plan, src));
    if (plan.WeightBytes() >= options.budget_bytes) {
      return core::InvalidArgument(
          fmt::format("{}.models: the weights take {} bytes, the budget is {}", src,
                      plan.WeightBytes(), options.budget_bytes));
    }
    const int64_t region = options.budget_bytes - plan.WeightBytes();
    ASSIGN_OR_RETURN(PlanRecordings rec, RecordPlanEntries(plan, src, region));
    RETURN_IF_ERROR(
        CheckPlanFitsServer(plan, src, options.budget_bytes, options.devices, rec.weight_bytes));
    s->recordings_ = std::make_unique<PlanRecordings>(std::move(rec));
    const int cpus = core::OnlineCpus();
    for (int d = 0; d < options.devices; ++d) {
      const int cpu = options.devices <= cpus ? core::AllowedCpu(cpus - 1 - d) : -1;
      ASSIGN_OR_RETURN(std::unique_ptr<PlannedDevice> dev,
                       PlannedDevice::Create(d, cpu, plan, *s->recordings_, options.budget_bytes));
      s->planned_.push_back(std::move(dev));
    }
    s->admission_ =
        std::make_unique<PlanAdmission>(plan, options.devices, s->planned_[0]->region_bytes());
    s->ready_.resize(static_cast<size_t>(options.devices));
    const int slots = plan.SlotsPerDevice();
    for (int d = 0; d < options.devices; ++d) {
      for (int k = 0; k < slots; ++k) s->workers_.emplace_back([self, d] { self->WorkPlanned(d); });
    }
    s->listener_ = std::thread([self] { self->http_->listen_after_bind(); });
    return s;
  }
  for (const PlannedTemplate& p : options.plans) {
    s->templates_.InsertMitigated(p.key, std::make_shared<MitigatedTemplate>(p.plan));
  }
  std::optional<runtime::TimeScale> scale;
  if (UsesHostTier(options.policy)) {
    ASSIGN_OR_RETURN(scale, HostLinkTimeScale(options.time_scale));
  }
  for (int d = 0; d < options.devices; ++d) {
    std::unique_ptr<HostTier> tier;
    if (scale) {
      ASSIGN_OR_RETURN(tier, HostTier::ForDevice(options.host_gbps, *scale));
    }
    s->devices_.push_back(std::make_unique<ServeDevice>(d, options.policy, options.budget_bytes,
                                                        &s->templates_, std::move(tier)));
  }
  for (int d = 0; d < options.devices; ++d) s->workers_.emplace_back([self, d] { self->Work(d); });
  s->listener_ = std::thread([self] { self->http_->listen_after_bind(); });
  return s;
}

DiffusionServer::~DiffusionServer() { Stop(); }

std::string DiffusionServer::url() const {
  return fmt::format("http://{}:{}", options_.host, port_);
}

void DiffusionServer::RequestStop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_requested_ = true;
  stop_cv_.notify_all();
}

void DiffusionServer::Wait(const std::function<bool()>& interrupted) {
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

void DiffusionServer::Stop() {
  std::lock_guard<std::mutex> stop_lock(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    accepting_ = false;
    workers_exit_ = true;  // after the queue drains
    stop_requested_ = true;
  }
  work_cv_.notify_all();
  stop_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  http_->stop();  // handlers have their replies now; the pool finishes writing them
  if (listener_.joinable()) listener_.join();
}

int64_t DiffusionServer::queue_length() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

core::Json DiffusionServer::Metrics() const {
  core::Json j = metrics_.ToJson();
  {
    std::lock_guard<std::mutex> lock(mu_);
    j["queue_length"] = queue_.size();
    j["in_flight"] = in_flight_;
  }
  j["queue_capacity"] = options_.queue_capacity;
  j["policy"] = options_.serving_plan != nullptr ? "plan" : MemoryPolicyName(options_.policy);
  j["budget_bytes"] = options_.budget_bytes;
  j["templates_planned"] = options_.serving_plan != nullptr
                               ? static_cast<int64_t>(options_.serving_plan->entries.size())
                               : templates_.size();
  core::Json devices = core::Json::array();
  for (const auto& d : devices_) {
    const DeviceSnapshot s = d->Snapshot();
    devices.push_back({{"device", d->index()},
                       {"live_bytes", s.live_bytes},
                       {"peak_bytes", s.peak_bytes},
                       {"peak_reserved_bytes", s.peak_reserved_bytes},
                       {"requests", s.requests},
                       {"weight_loads", s.weight_loads},
                       {"region_maps", s.region_maps}});
  }
  for (const auto& d : planned_) {
    const DeviceSnapshot s = d->Snapshot();
    devices.push_back({{"device", d->index()},
                       {"cpu", d->cpu()},
                       {"live_bytes", s.live_bytes},
                       {"peak_bytes", s.peak_bytes},
                       {"peak_reserved_bytes", s.peak_reserved_bytes},
                       {"requests", s.requests}});
  }
  j["devices"] = devices;
  if (options_.serving_plan != nullptr) {
    j["template_misses"] = {{"covered", misses_covered_.load()},
                            {"fallback", misses_fallback_.load()}};
    j["batch_mates"] = batch_mates_.load();
  }
  return j;
}

DiffusionServer::Reply DiffusionServer::Generate(GenerationKind kind, const std::string& body) {
  const Clock::time_point arrival = Clock::now();
  Reply reply;
  auto finish = [&](int status, const std::string& message, bool hit) {
    if (status != 200) reply = {status, ErrorBody(status, message)};
    reply.status = status;
    metrics_.Record(status, core::SecondsSince(arrival), hit);
    if (options_.max_requests > 0 && metrics_.replies() >= options_.max_requests) RequestStop();
    return reply;
  };
  auto parsed = ParseGenerationRequest(body, kind);
  if (!parsed.ok()) return finish(400, parsed.status().message(), false);
  const DiffusionRequest& r = parsed->request;
  auto spec = TinyModel(r.model);
  if (!spec.ok()) return finish(400, spec.status().message(), false);
  // The least the request can need under this policy: with its strongest mitigations.
  const MemoryPolicy strongest =
      options_.serving_plan != nullptr ? MemoryPolicy::kTiling : options_.policy;
  const int64_t need = MinimumPeakBytes(*spec, StrongestMitigations(strongest, *spec, r));
  if (need > options_.budget_bytes) {
    return finish(507,
                  fmt::format("out of device memory: {} needs at least {} bytes (weights and the "
                              "VAE's full-resolution activations), the budget is {}",
                              TemplateKeyString(r), need, options_.budget_bytes),
                  false);
  }
  auto job = std::make_shared<Job>();
  job->request = std::move(*parsed);
  job->arrival = arrival;
  if (options_.serving_plan != nullptr) {
    const ServingPlan& plan = *options_.serving_plan;
    job->route = RouteRequest(plan, job->request.request);
    if (job->route.kind != RouteKind::kExact) {
      (job->route.kind == RouteKind::kCovered ? misses_covered_ : misses_fallback_).fetch_add(1);
      std::fprintf(
          stderr, "template miss: %s -> %s\n", TemplateKeyString(job->request.request).c_str(),
          job->route.kind == RouteKind::kCovered
              ? ("covered by " + plan.entries[static_cast<size_t>(job->route.entry)].key).c_str()
              : "fallback (caching allocator, all mitigations, alone on a device)");
    }
  }
  std::future<void> done = job->done.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return finish(503, "server is stopping", false);
    if (static_cast<int>(queue_.size()) >= options_.queue_capacity) {
      return finish(
          429, fmt::format("queue full: {} requests waiting, retry later", options_.queue_capacity),
          false);
    }
    queue_.push_back(job);
    if (admission_ != nullptr) DispatchLocked();
  }
  if (admission_ != nullptr) {
    work_cv_.notify_all();
  } else {
    work_cv_.notify_one();
  }
  done.wait();
  if (!job->status.ok()) return finish(HttpStatus(job->status), job->status.message(), false);

  const DiffusionRequest& req = job->request.request;
  core::Json data = core::Json::array();
  if (job->request.return_images) {
    for (int64_t f = 0; f < req.frames; ++f) {
      auto png = FramePng(job->run.output, f, req.width, req.height);
      if (!png.ok()) return finish(500, png.status().message(), false);
      data.push_back({{"b64_json", EncodeBase64(*png)}});
    }
  }
  reply.body = {
      {"created", static_cast<int64_t>(std::time(nullptr))},
      {"data", std::move(data)},
      {"latency_s", core::SecondsSince(arrival)},
      {"queue_s", job->queue_s},
      {"peak_bytes", job->run.peak_bytes},
      {"template_hit", job->run.template_hit},
      {"mitigations", job->run.mitigations},
      {"template", TemplateKeyString(req)},
      {"policy", options_.serving_plan != nullptr ? "plan" : MemoryPolicyName(options_.policy)},
      {"device", job->device}};
  if (options_.serving_plan != nullptr) reply.body["route"] = RouteKindName(job->route.kind);
  return finish(200, "", job->run.template_hit);
}

void DiffusionServer::RunJob(Job& job, int device,
                             const std::function<core::StatusOr<DeviceRun>()>& execute) {
  // The head and its batch mates: each one past its deadline is answered 503; the pass runs
  // when any of them is still within its own.
  std::vector<Job*> batch = {&job};
  for (const auto& m : job.mates) batch.push_back(m.get());
  bool any = false;
  for (Job* b : batch) {
    b->device = device;
    b->queue_s = core::SecondsSince(b->arrival);
    const double deadline_s = b->request.deadline_s;
    if (deadline_s > 0 && b->queue_s > deadline_s) {
      b->status = core::DeadlineExceeded(
          fmt::format("deadline_s {} passed while queued ({} s)", deadline_s, b->queue_s));
    } else {
      any = true;
    }
  }
  if (!any) return;
  if (options_.before_run) options_.before_run(device);
  auto run = execute();
  if (!run.ok()) {
    for (Job* b : batch) {
      if (b->status.ok()) b->status = run.status();
    }
    return;
  }
  // Request i's frames are the i-th slice of the pass's output.
  const size_t each = run->output.size() / batch.size();
  for (size_t i = 0; i < batch.size(); ++i) {
    Job& b = *batch[i];
    b.run.peak_bytes = run->peak_bytes;
    b.run.template_hit = run->template_hit;
    b.run.mitigations = run->mitigations;
    if (i > 0) {
      const auto from = run->output.begin() + static_cast<std::ptrdiff_t>(i * each);
      b.run.output.assign(from, from + static_cast<std::ptrdiff_t>(each));
    }
  }
  run->output.resize(each);
  job.run.output = std::move(run->output);
}

void DiffusionServer::DispatchLocked() {
  while (!queue_.empty()) {
    const std::shared_ptr<Job> head = queue_.front();
    const std::optional<Admission> a = admission_->Admit(head->route);
    if (!a) return;  // strict FCFS: the head waits, and everything behind it
    queue_.pop_front();
    head->admission = *a;
    head->members_left = a->span;
    if (a->span > 1) head->world = std::make_shared<comm::InProcessWorld>(a->span);
    // Its batch mates leave the queue with it (plan_admission.h).
    head->mates = TakeBatchMates(*options_.serving_plan, head->route, queue_,
                                 [](const std::shared_ptr<Job>& j) { return j->route; });
    in_flight_ += 1 + static_cast<int>(head->mates.size());
    batch_mates_ += static_cast<int64_t>(head->mates.size());
    for (int m = 0; m < a->span; ++m)
      ready_[static_cast<size_t>(a->device + m)].push_back({head, m});
  }
}

void DiffusionServer::WorkPlanned(int device) {
  (void)kernels::SetBlasNumThreads(1);
  PlannedDevice& dev = *planned_[static_cast<size_t>(device)];
  if (dev.cpu() >= 0) (void)core::PinThisThreadToCpu(dev.cpu());
  auto& ready = ready_[static_cast<size_t>(device)];
  for (;;) {
    std::shared_ptr<Job> job;
    int member = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] {
        return !ready.empty() || (workers_exit_ && queue_.empty() && in_flight_ == 0);
      });
      if (ready.empty()) return;
      std::tie(job, member) = std::move(ready.front());
      ready.pop_front();
    }
    // The head's request, with its batch mates' prompts, seeds and guidance scales as batch
    // mates (their frames follow the head's in the output).
    DiffusionRequest request = job->request.request;
    for (const auto& m : job->mates) {
      const DiffusionRequest& q = m->request.request;
      request.batch_mates.push_back(BatchMate{q.prompt, q.seed, q.guidance});
    }
    if (job->world == nullptr) {
      RunJob(*job, device, [&] { return dev.Execute(request, job->route, job->admission); });
    } else {
      // One member of an SP gang: every member runs at once on its device (admission held a
      // slot on each); member 0 answers. A member that returns is marked gone, so a peer
      // waiting on it gets an error instead of hanging.
      std::unique_ptr<comm::Communicator> c = job->world->Rank(member);
      const SpMember sp{c.get(), member};
      auto execute = [&] { return dev.Execute(request, job->route, job->admission, &sp); };
      if (member == 0) {
        RunJob(*job, device, execute);
      } else {
        auto run = execute();
        if (!run.ok()) {
          std::lock_guard<std::mutex> lock(mu_);
          if (job->member_status.ok()) job->member_status = run.status();
        }
      }
      job->world->MarkExited(member);
    }
    bool finished = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--job->members_left == 0) {
        if (!job->member_status.ok()) {
          if (job->status.ok()) job->status = job->member_status;
          for (const auto& m : job->mates) {
            if (m->status.ok()) m->status = job->member_status;
          }
        }
        admission_->Release(job->route, job->admission);
        in_flight_ -= 1 + static_cast<int>(job->mates.size());
        DispatchLocked();
        finished = true;
      }
    }
    work_cv_.notify_all();
    if (finished) {
      for (const auto& m : job->mates) m->done.set_value();
      job->done.set_value();
    }
  }
}

void DiffusionServer::Work(int device) {
  // A device is one core: GEMMs single-threaded (the setting is process-wide; every worker
  // asks for the same).
  (void)kernels::SetBlasNumThreads(1);
  ServeDevice& dev = *devices_[static_cast<size_t>(device)];
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [this] { return !queue_.empty() || workers_exit_; });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      ++in_flight_;
    }
    RunJob(*job, device, [&] { return dev.Execute(job->request.request); });
    {
      std::lock_guard<std::mutex> lock(mu_);
      --in_flight_;
    }
    job->done.set_value();
  }
}

}  // namespace tessera::xema

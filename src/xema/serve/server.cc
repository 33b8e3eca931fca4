#include "xema/serve/server.h"

#include <fmt/format.h>

#include <ctime>
#include <future>

#include "core/elapsed.h"
#include "serve/base64.h"
#include "serve/png.h"
#include "xema/pipeline/template_check.h"
#include "xema/serve/memory_policy_server.h"
#include "xema/serve/planned_server.h"

namespace tessera::xema {

core::StatusOr<std::unique_ptr<DiffusionServer>> DiffusionServer::Start(
    const ServerOptions& options) {
  RETURN_IF_ERROR(ValidateServerOptions(options));
  if (options.serving_plan != nullptr) {
    ASSIGN_OR_RETURN(std::unique_ptr<PlannedServer> s, PlannedServer::Start(options));
    return std::unique_ptr<DiffusionServer>(std::move(s));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<MemoryPolicyServer> s, MemoryPolicyServer::Start(options));
  return std::unique_ptr<DiffusionServer>(std::move(s));
}

DiffusionServer::~DiffusionServer() { Stop(); }

core::Status DiffusionServer::Bind(int slots_per_device) {
  serve::ServerOptions o;
  o.http = options_.http;
  o.http.host = options_.host;
  o.http.port = options_.port;
  o.http.max_body_bytes = options_.max_body_bytes;
  o.http.http_threads = options_.http_threads;
  o.runner.devices = options_.devices;
  o.runner.slots_per_device = slots_per_device;
  o.runner.queue_capacity = options_.queue_capacity;
  o.max_requests = options_.max_requests;
  o.duration_s = options_.duration_s;
  ASSIGN_OR_RETURN(core_, serve::Server::Bind(o));
  for (GenerationKind kind : {GenerationKind::kImage, GenerationKind::kVideo}) {
    core_->http().Post(GenerationRoute(kind),
                       [this, kind](const std::string& body) { return Generate(kind, body); });
  }
  core_->http().Get("/v1/metrics", [this]() { return serve::Reply{200, Metrics()}; });
  return core::Status::Ok();
}

std::string DiffusionServer::url() const { return core_->url(); }

void DiffusionServer::Wait(const std::function<bool()>& interrupted) {
  if (core_ != nullptr) core_->Wait(interrupted);
}

void DiffusionServer::Stop() {
  if (core_ != nullptr) core_->Stop();
}

core::Json DiffusionServer::Metrics() const {
  core::Json j = core_->Metrics();
  j["policy"] = PolicyName();
  j["budget_bytes"] = options_.budget_bytes;
  AddMetrics(j);
  return j;
}

serve::Reply DiffusionServer::Generate(GenerationKind kind, const std::string& body) {
  const serve::Clock::time_point arrival = serve::Clock::now();
  serve::Reply reply;
  auto finish = [&](int status, const std::string& message, bool hit) {
    if (status != 200) reply = serve::ErrorReply(status, message);
    reply.status = status;
    core_->Record(status, core::SecondsSince(arrival), hit);
    return reply;
  };
  auto parsed = ParseGenerationRequest(body, kind);
  if (!parsed.ok()) return finish(400, parsed.status().message(), false);
  const DiffusionRequest& r = parsed->request;
  auto spec = TinyModel(r.model);
  if (!spec.ok()) return finish(400, spec.status().message(), false);
  // The least the request can need under this policy: with its strongest mitigations.
  const int64_t need = MinimumPeakBytes(*spec, StrongestMitigations(StrongestPolicy(), *spec, r));
  if (need > options_.budget_bytes) {
    return finish(507,
                  fmt::format("out of device memory: {} needs at least {} bytes (weights and the "
                              "VAE's full-resolution activations), the budget is {}",
                              TemplateKeyString(r), need, options_.budget_bytes),
                  false);
  }
  auto job = std::make_shared<DiffusionJob>();
  job->request = std::move(*parsed);
  job->arrival = arrival;
  job->deadline_s = job->request.deadline_s;
  RouteJob(*job);
  std::future<void> done = job->done.get_future();
  if (std::optional<serve::Reply> refused = core_->Submit(job)) {
    return finish(refused->status, refused->body["error"]["message"].get<std::string>(), false);
  }
  done.wait();
  if (!job->status.ok()) {
    return finish(serve::HttpStatusOf(job->status), job->status.message(), false);
  }

  const DiffusionRequest& req = job->request.request;
  core::Json data = core::Json::array();
  if (job->request.return_images) {
    for (int64_t f = 0; f < req.frames; ++f) {
      auto png = serve::FramePng(job->run.output, f, req.width, req.height);
      if (!png.ok()) return finish(500, png.status().message(), false);
      data.push_back({{"b64_json", serve::EncodeBase64(*png)}});
    }
  }
  reply.body = {{"created", static_cast<int64_t>(std::time(nullptr))},
                {"data", std::move(data)},
                {"latency_s", core::SecondsSince(arrival)},
                {"queue_s", job->queue_s},
                {"peak_bytes", job->run.peak_bytes},
                {"template_hit", job->run.template_hit},
                {"mitigations", job->run.mitigations},
                {"template", TemplateKeyString(req)},
                {"policy", PolicyName()},
                {"device", job->device}};
  AddReplyFields(*job, reply.body);
  return finish(200, "", job->run.template_hit);
}

void DiffusionServer::RunPass(DiffusionJob& job, int device,
                              const std::function<core::StatusOr<DeviceRun>()>& execute) {
  // The head and its batch mates: each one past its deadline is answered 503; the pass runs
  // when any of them is still within its own.
  std::vector<serve::Job*> batch = {&job};
  for (const auto& m : job.mates) batch.push_back(m.get());
  if (!serve::StartBatch(batch, device)) return;
  if (options_.before_run) options_.before_run(device);
  auto run = execute();
  if (!run.ok()) {
    for (serve::Job* b : batch) {
      if (b->status.ok()) b->status = run.status();
    }
    return;
  }
  // Request i's frames are the i-th slice of the pass's output.
  const size_t each = run->output.size() / batch.size();
  for (size_t i = 0; i < batch.size(); ++i) {
    DeviceRun& b = static_cast<DiffusionJob&>(*batch[i]).run;
    b.peak_bytes = run->peak_bytes;
    b.template_hit = run->template_hit;
    b.mitigations = run->mitigations;
    if (i > 0) {
      const auto from = run->output.begin() + static_cast<std::ptrdiff_t>(i * each);
      b.output.assign(from, from + static_cast<std::ptrdiff_t>(each));
    }
  }
  run->output.resize(each);
  job.run.output = std::move(run->output);
}

}  // namespace tessera::xema

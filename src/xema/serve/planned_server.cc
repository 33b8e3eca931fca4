#include "xema/serve/planned_server.h"

#include <fmt/format.h>

#include <cstdio>

#include "core/cpu_affinity.h"
#include "kernels/gemm.h"
#include "xema/serve/plan_job_admission.h"

namespace tessera::xema {

core::StatusOr<std::unique_ptr<PlannedServer>> PlannedServer::Start(const ServerOptions& options) {
  std::unique_ptr<PlannedServer> s(new PlannedServer(options));
  const ServingPlan& plan = *options.serving_plan;
  RETURN_IF_ERROR(s->Bind(plan.SlotsPerDevice()));
  const std::string& src = options.serving_plan_source;
  RETURN_IF_ERROR(CheckPlanDevice(plan, src));
  if (plan.WeightBytes() >= options.budget_bytes) {
    return core::InvalidArgument(
        fmt::format("{}.models: the weights take {} bytes, the budget is {}", src,
                    plan.WeightBytes(), options.budget_bytes));
  }
  // Profiling before serving: every entry of the plan is recorded and laid out now.
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
    s->devices_.push_back(std::move(dev));
  }
  PlannedServer* self = s.get();
  auto admission =
      std::make_unique<PlanJobAdmission>(plan, options.devices, s->devices_[0]->region_bytes());
  s->core_->Start(
      std::move(admission),
      [self](serve::Job& j, const serve::Placement&, int device, int member) {
        return self->RunMember(static_cast<DiffusionJob&>(j), device, member);
      },
      [self](int device) {
        (void)kernels::SetBlasNumThreads(1);
        const int cpu = self->devices_[static_cast<size_t>(device)]->cpu();
        if (cpu >= 0) (void)core::PinThisThreadToCpu(cpu);
      });
  return s;
}

PlannedServer::~PlannedServer() { Stop(); }  // the workers use the devices

core::Status PlannedServer::RunMember(DiffusionJob& job, int device, int member) {
  PlannedDevice& dev = *devices_[static_cast<size_t>(device)];
  // The head's request, with its batch mates' prompts, seeds and guidance scales as batch
  // mates (their frames follow the head's in the output).
  DiffusionRequest request = job.request.request;
  for (const auto& m : job.mates) {
    const DiffusionRequest& q = static_cast<DiffusionJob&>(*m).request.request;
    request.batch_mates.push_back(BatchMate{q.prompt, q.seed, q.guidance});
  }
  if (job.world == nullptr) {
    RunPass(job, device, [&] { return dev.Execute(request, job.route, job.admission); });
    return core::Status::Ok();
  }
  // One member of an SP gang: every member runs at once on its device (admission held a slot
  // on each); member 0 answers. A member that returns is marked gone, so a peer waiting on it
  // gets an error instead of hanging.
  std::unique_ptr<comm::Communicator> c = job.world->Rank(member);
  const SpMember sp{c.get(), member};
  auto execute = [&] { return dev.Execute(request, job.route, job.admission, &sp); };
  core::Status status;
  if (member == 0) {
    RunPass(job, device, execute);
  } else {
    auto run = execute();
    if (!run.ok()) status = run.status();
  }
  job.world->MarkExited(member);
  return status;
}

void PlannedServer::RouteJob(DiffusionJob& job) {
  const ServingPlan& plan = *options_.serving_plan;
  job.route = RouteRequest(plan, job.request.request);
  if (job.route.kind == RouteKind::kExact) return;
  (job.route.kind == RouteKind::kCovered ? misses_covered_ : misses_fallback_).fetch_add(1);
  std::fprintf(
      stderr, "template miss: %s -> %s\n", TemplateKeyString(job.request.request).c_str(),
      job.route.kind == RouteKind::kCovered
          ? ("covered by " + plan.entries[static_cast<size_t>(job.route.entry)].key).c_str()
          : "fallback (caching allocator, all mitigations, alone on a device)");
}

void PlannedServer::AddReplyFields(const DiffusionJob& job, core::Json& body) const {
  body["route"] = RouteKindName(job.route.kind);
}

void PlannedServer::AddMetrics(core::Json& j) const {
  j["templates_planned"] = static_cast<int64_t>(options_.serving_plan->entries.size());
  core::Json devices = core::Json::array();
  for (const auto& d : devices_) {
    const DeviceSnapshot s = d->Snapshot();
    devices.push_back({{"device", d->index()},
                       {"cpu", d->cpu()},
                       {"live_bytes", s.live_bytes},
                       {"peak_bytes", s.peak_bytes},
                       {"peak_reserved_bytes", s.peak_reserved_bytes},
                       {"requests", s.requests}});
  }
  j["devices"] = devices;
  j["template_misses"] = {{"covered", misses_covered_.load()},
                          {"fallback", misses_fallback_.load()}};
  j["batch_mates"] = core_->batch_mates();
}

}  // namespace tessera::xema

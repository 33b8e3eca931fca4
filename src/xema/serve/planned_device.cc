#include "xema/serve/planned_device.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "xema/pipeline/caching_device_allocator.h"
#include "xema/pipeline/layout_allocator.h"
#include "xema/pipeline/template_check.h"

namespace tessera::xema {

core::StatusOr<std::shared_ptr<TemplatePlan>> RecordTemplatePlan(DiffusionPipeline& pipeline,
                                                                 const DiffusionRequest& request,
                                                                 int64_t activation_budget_bytes) {
  ASSIGN_OR_RETURN(RecordedRequest rec,
                   RecordActivations(pipeline, request, activation_budget_bytes));
  auto plan = std::make_shared<TemplatePlan>();
  plan->trace = std::move(rec.trace);
  ASSIGN_OR_RETURN(plan->expanded, Expand(plan->trace));
  ASSIGN_OR_RETURN(plan->layout, PlanLayout(plan->expanded, "tflite", LayoutOptions{}));
  return plan;
}

core::StatusOr<PlanRecordings> RecordPlanEntries(const ServingPlan& plan, const std::string& source,
                                                 int64_t region_bytes) {
  PlanRecordings out;
  HeapDeviceAllocator heap;
  std::map<std::string, std::unique_ptr<DiffusionPipeline>> pipelines;
  for (const auto& [name, bytes] : plan.model_weight_bytes) {
    auto spec = TinyModel(name);
    if (!spec.ok()) return spec.status().WithPrefix(fmt::format("{}.models", source));
    ASSIGN_OR_RETURN(std::unique_ptr<DiffusionPipeline> p, DiffusionPipeline::Load(*spec, heap));
    out.weight_bytes[name] = p->WeightBytes();
    pipelines[name] = std::move(p);
  }
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const ServingPlanEntry& e = plan.entries[i];
    const std::string path = fmt::format("{}.entries[{}]", source, i);
    auto recorded = RecordTemplatePlan(*pipelines.at(e.request.model), e.request, region_bytes);
    if (!recorded.ok()) return recorded.status().WithPrefix(path + ": recording " + e.key);
    std::shared_ptr<TemplatePlan> plan_i = std::move(*recorded);
    if (plan_i->layout.arena_bytes != e.arena_bytes) {
      return core::InvalidArgument(fmt::format(
          "{}.memory.arena_bytes: got {}, template {} lays out in {} bytes here (a plan for "
          "another model or build: plan it again here)",
          path, e.arena_bytes, e.key, plan_i->layout.arena_bytes));
    }
    out.entries.push_back(std::move(plan_i));
  }
  return out;
}

PlannedDevice::PlannedDevice(int index, int cpu, const ServingPlan& plan,
                             const PlanRecordings& recordings, int64_t budget_bytes)
    : index_(index),
      cpu_(cpu),
      plan_(plan),
      recordings_(recordings),
      budget_bytes_(budget_bytes),
      weights_(budget_bytes) {}

PlannedDevice::~PlannedDevice() {
  pipelines_.clear();
  if (region_ != nullptr) munmap(region_, static_cast<size_t>(region_bytes_));
}

core::StatusOr<std::unique_ptr<PlannedDevice>> PlannedDevice::Create(
    int index, int cpu, const ServingPlan& plan, const PlanRecordings& recordings,
    int64_t budget_bytes) {
  std::unique_ptr<PlannedDevice> d(new PlannedDevice(index, cpu, plan, recordings, budget_bytes));
  for (const auto& [name, bytes] : plan.model_weight_bytes) {
    ASSIGN_OR_RETURN(const TinyModelSpec spec, TinyModel(name));
    auto loaded = DiffusionPipeline::Load(spec, d->weights_);
    if (!loaded.ok()) {
      return loaded.status().WithPrefix(fmt::format("device {}: loading {}", index, name));
    }
    d->pipelines_[name] = std::move(*loaded);
  }
  d->region_bytes_ = budget_bytes - d->weights_.live_bytes();
  if (d->region_bytes_ <= 0) {
    return core::Infeasible(
        fmt::format("device {}: the plan's weights take {} bytes, the whole budget of {}", index,
                    d->weights_.live_bytes(), budget_bytes));
  }
  void* p = mmap(nullptr, static_cast<size_t>(d->region_bytes_), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    return core::Infeasible(
        fmt::format("device {}: cannot map an activation region of {} bytes: {}", index,
                    d->region_bytes_, std::strerror(errno)));
  }
  d->region_ = static_cast<char*>(p);
  d->live_bytes_.store(d->weights_.live_bytes());
  return d;
}

void PlannedDevice::Account(int64_t delta_live_bytes, int64_t request_peak_bytes) {
  const int64_t live = live_bytes_.fetch_add(delta_live_bytes) + delta_live_bytes;
  int64_t seen = peak_live_bytes_.load();
  while (live > seen && !peak_live_bytes_.compare_exchange_weak(seen, live)) {
  }
  seen = peak_bytes_.load();
  while (request_peak_bytes > seen &&
         !peak_bytes_.compare_exchange_weak(seen, request_peak_bytes)) {
  }
}

core::StatusOr<DeviceRun> PlannedDevice::Execute(const DiffusionRequest& request,
                                                 const Route& route, const Admission& admission) {
  requests_.fetch_add(1);
  ASSIGN_OR_RETURN(const TinyModelSpec spec, TinyModel(request.model));
  auto pit = pipelines_.find(spec.name);
  if (pit == pipelines_.end()) {
    return core::InvalidArgument(
        fmt::format("model: got '{}', not served by this plan", spec.name));
  }
  DiffusionPipeline& pipeline = *pit->second;
  const int64_t weights = weights_.live_bytes();
  DeviceRun run;
  DiffusionRequest r;
  std::unique_ptr<DeviceAllocator> act;
  LayoutDeviceAllocator* arena = nullptr;
  int64_t held = 0;  // device bytes this request holds while it runs
  if (route.kind == RouteKind::kFallback) {
    r = FallbackRequest(spec, request);
    AllocatorPolicy p;  // PyTorch's defaults
    p.device_limit_bytes = region_bytes_;
    act = std::make_unique<CachingDeviceAllocator>(p);
    held = region_bytes_;  // the device is its alone
  } else {
    const ServingPlanEntry& e = plan_.entries[static_cast<size_t>(route.entry)];
    r = CopyMitigations(e.request, request);
    held = e.arena_bytes;
    if (route.kind == RouteKind::kExact) {
      ASSIGN_OR_RETURN(std::unique_ptr<LayoutDeviceAllocator> a,
                       LayoutDeviceAllocator::CreateIn(
                           recordings_.entries[static_cast<size_t>(route.entry)]->expanded,
                           recordings_.entries[static_cast<size_t>(route.entry)]->layout,
                           region_ + admission.offset, e.arena_bytes));
      arena = a.get();
      act = std::move(a);
      run.template_hit = true;
    } else {
      if (!ValidateRequest(spec, r).ok()) r = FallbackRequest(spec, request);
      act = std::make_unique<HeapDeviceAllocator>(e.arena_bytes);
    }
  }
  Account(held, 0);
  run.output.assign(static_cast<size_t>(OutputFloats(r)), 0.0f);
  core::Status s = pipeline.Run(r, run.output, act.get());
  if (s.ok() && arena != nullptr) s = arena->status();
  run.peak_bytes = weights + act->peak_bytes();
  act.reset();
  Account(-held, run.peak_bytes);
  if (!s.ok()) return s.WithPrefix(fmt::format("device {}", index_));
  run.mitigations = MitigationLabels(r);
  return run;
}

DeviceSnapshot PlannedDevice::Snapshot() const {
  DeviceSnapshot s;
  s.live_bytes = live_bytes_.load();
  s.peak_bytes = peak_bytes_.load();
  s.peak_reserved_bytes = peak_live_bytes_.load();
  s.requests = requests_.load();
  s.weight_loads = static_cast<int64_t>(plan_.model_weight_bytes.size());
  s.region_maps = 1;
  return s;
}

}  // namespace tessera::xema

#include "xema/serve/planned_device.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "comm/in_process_communicator.h"
#include "kernels/gemm.h"
#include "xema/pipeline/caching_device_allocator.h"
#include "xema/pipeline/layout_allocator.h"
#include "xema/pipeline/template_check.h"

namespace tessera::xema {

core::StatusOr<std::shared_ptr<TemplatePlan>> RecordTemplatePlan(DiffusionPipeline& pipeline,
                                                                 const DiffusionRequest& request,
                                                                 int64_t activation_budget_bytes,
                                                                 const SpMember* sp) {
  ASSIGN_OR_RETURN(RecordedRequest rec,
                   RecordActivations(pipeline, request, activation_budget_bytes, nullptr, sp));
  auto plan = std::make_shared<TemplatePlan>();
  plan->trace = std::move(rec.trace);
  ASSIGN_OR_RETURN(plan->expanded, Expand(plan->trace));
  ASSIGN_OR_RETURN(plan->layout, PlanLayout(plan->expanded, "tflite", LayoutOptions{}));
  return plan;
}

core::StatusOr<std::vector<std::shared_ptr<TemplatePlan>>> RecordSpTemplatePlans(
    const std::vector<DiffusionPipeline*>& pipelines, const DiffusionRequest& request,
    int64_t activation_budget_bytes) {
  const int d = static_cast<int>(pipelines.size());
  if (d == 1) {
    ASSIGN_OR_RETURN(std::shared_ptr<TemplatePlan> one,
                     RecordTemplatePlan(*pipelines[0], request, activation_budget_bytes));
    return std::vector<std::shared_ptr<TemplatePlan>>{std::move(one)};
  }
  std::vector<core::StatusOr<std::shared_ptr<TemplatePlan>>> got(
      static_cast<size_t>(d), core::Internal("sp member did not run"));
  comm::RunInProcessRanks(d, [&](comm::Communicator& world) {
    (void)kernels::SetBlasNumThreads(1);
    const SpMember sp{&world, world.rank()};
    got[static_cast<size_t>(world.rank())] = RecordTemplatePlan(
        *pipelines[static_cast<size_t>(world.rank())], request, activation_budget_bytes, &sp);
  });
  std::vector<std::shared_ptr<TemplatePlan>> out;
  for (int m = 0; m < d; ++m) {
    auto& g = got[static_cast<size_t>(m)];
    if (!g.ok()) return g.status().WithPrefix(fmt::format("sp member {} of {}", m, d));
    out.push_back(std::move(*g));
  }
  return out;
}

int64_t SpArenaBytes(const std::vector<std::shared_ptr<TemplatePlan>>& members) {
  int64_t most = 0;
  for (const auto& m : members) most = std::max(most, m->layout.arena_bytes);
  return most;
}

core::StatusOr<PlanRecordings> RecordPlanEntries(const ServingPlan& plan, const std::string& source,
                                                 int64_t region_bytes) {
  PlanRecordings out;
  runtime::HeapDeviceAllocator heap;
  // Per model, as many pipelines (replicas) as the largest SP degree of its entries.
  std::map<std::string, std::vector<std::unique_ptr<DiffusionPipeline>>> pipelines;
  for (const auto& [name, bytes] : plan.model_weight_bytes) {
    auto spec = TinyModel(name);
    if (!spec.ok()) return spec.status().WithPrefix(fmt::format("{}.models", source));
    int replicas = 1;
    for (const ServingPlanEntry& e : plan.entries)
      if (e.request.model == name) replicas = std::max(replicas, e.sp_degree);
    for (int k = 0; k < replicas; ++k) {
      ASSIGN_OR_RETURN(std::unique_ptr<DiffusionPipeline> p, DiffusionPipeline::Load(*spec, heap));
      out.weight_bytes[name] = p->WeightBytes();
      pipelines[name].push_back(std::move(p));
    }
  }
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const ServingPlanEntry& e = plan.entries[i];
    const std::string path = fmt::format("{}.entries[{}]", source, i);
    std::vector<DiffusionPipeline*> members;
    for (int m = 0; m < e.sp_degree; ++m)
      members.push_back(pipelines.at(e.request.model)[static_cast<size_t>(m)].get());
    std::vector<std::vector<std::shared_ptr<const TemplatePlan>>> batches;
    int64_t arena = 0;
    for (int k = 1; k <= e.batch; ++k) {
      auto recorded = RecordSpTemplatePlans(members, BatchTemplate(e.request, k), region_bytes);
      if (!recorded.ok()) {
        return recorded.status().WithPrefix(
            fmt::format("{}: recording {} (batch of {})", path, e.key, k));
      }
      arena = std::max(arena, SpArenaBytes(*recorded));
      batches.emplace_back(recorded->begin(), recorded->end());
    }
    if (arena != e.arena_bytes) {
      return core::InvalidArgument(fmt::format(
          "{}.memory.arena_bytes: got {}, template {} (batch {}) lays out in {} bytes here (a "
          "plan for another model or build: plan it again here)",
          path, e.arena_bytes, e.key, e.batch, arena));
    }
    out.entries.push_back(std::move(batches));
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
                                                 const Route& route, const Admission& admission,
                                                 const SpMember* sp) {
  const int member = sp == nullptr ? 0 : sp->member;
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
  std::unique_ptr<runtime::DeviceAllocator> act;
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
    const int64_t batch = RequestBatch(request);
    if (batch > 1 && (route.kind != RouteKind::kExact || batch > e.batch)) {
      return core::InvalidArgument(fmt::format(
          "request.batch_mates: a batch of {} on entry {} ({} route, batch {}): only an exact "
          "route runs a batch, of at most the entry's",
          batch, e.key, RouteKindName(route.kind), e.batch));
    }
    if (route.kind == RouteKind::kExact) {
      const TemplatePlan& mine =
          *recordings_.entries[static_cast<size_t>(route.entry)][static_cast<size_t>(batch - 1)]
                              [static_cast<size_t>(member)];
      const int64_t offset = admission.offsets.empty()
                                 ? admission.offset
                                 : admission.offsets[static_cast<size_t>(member)];
      ASSIGN_OR_RETURN(std::unique_ptr<LayoutDeviceAllocator> a,
                       LayoutDeviceAllocator::CreateIn(mine.expanded, mine.layout, region_ + offset,
                                                       e.arena_bytes));
      arena = a.get();
      act = std::move(a);
      run.template_hit = true;
    } else {
      if (!ValidateRequest(spec, r).ok()) r = FallbackRequest(spec, request);
      act = std::make_unique<runtime::HeapDeviceAllocator>(e.arena_bytes);
    }
  }
  Account(held, 0);
  if (member == 0) run.output.assign(static_cast<size_t>(OutputFloats(r)), 0.0f);
  core::Status s = pipeline.Run(r, run.output, act.get(), sp);
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

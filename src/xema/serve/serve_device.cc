#include "xema/serve/serve_device.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "xema/caching_allocator.h"
#include "xema/pipeline/mitigation_planner.h"
#include "xema/pipeline/template_check.h"

namespace tessera::xema {

std::shared_ptr<const TemplatePlan> TemplateCache::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(key);
  return it == plans_.end() ? nullptr : it->second;
}

std::shared_ptr<const TemplatePlan> TemplateCache::Insert(
    const std::string& key, std::shared_ptr<const TemplatePlan> plan) {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.emplace(key, std::move(plan)).first->second;
}

std::shared_ptr<const MitigatedTemplate> TemplateCache::FindMitigated(
    const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = mitigated_.find(key);
  return it == mitigated_.end() ? nullptr : it->second;
}

std::shared_ptr<const MitigatedTemplate> TemplateCache::InsertMitigated(
    const std::string& key, std::shared_ptr<const MitigatedTemplate> plan) {
  std::lock_guard<std::mutex> lock(mu_);
  return mitigated_.emplace(key, std::move(plan)).first->second;
}

DiffusionRequest CopyMitigations(const DiffusionRequest& from, const DiffusionRequest& to) {
  DiffusionRequest r = to;
  r.ffn_chunks = from.ffn_chunks;
  r.attention_chunks = from.attention_chunks;
  r.vae_frame_slices = from.vae_frame_slices;
  r.vae_tiles = from.vae_tiles;
  r.offload = from.offload;
  return r;
}

std::vector<std::string> MitigationLabels(const DiffusionRequest& r) {
  std::vector<std::string> l;
  if (r.ffn_chunks > 1) l.push_back(fmt::format("ffn_chunks={}", r.ffn_chunks));
  if (r.attention == models::AttentionMode::kChunked && r.attention_chunks > 1) {
    l.push_back(fmt::format("attention_chunks={}", r.attention_chunks));
  }
  if (r.vae_frame_slices > 1) l.push_back(fmt::format("vae_slices={}", r.vae_frame_slices));
  if (r.vae_tiles > 1) l.push_back(fmt::format("vae_tiles={}", r.vae_tiles));
  if (r.offload.text_context) l.push_back("offload:text");
  if (r.offload.latent) l.push_back("offload:latent");
  if (r.offload.image) l.push_back("offload:image");
  if (r.offload.idle_weights) l.push_back("offload:weights");
  return l;
}

int64_t TemplateCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(plans_.size());
}

std::string TemplateKeyString(const DiffusionRequest& r) {
  return fmt::format("{} {}x{}x{} steps {} cfg {}", r.model, r.width, r.height, r.frames, r.steps,
                     r.cfg ? "on" : "off");
}

ServeDevice::ServeDevice(int index, MemoryPolicy policy, int64_t budget_bytes, TemplateCache* cache,
                         std::unique_ptr<HostTier> host)
    : index_(index),
      policy_(policy),
      budget_bytes_(budget_bytes),
      cache_(cache),
      host_(std::move(host)) {
  if (UsesStaticArena(policy_)) {
    weights_ = std::make_unique<runtime::HeapDeviceAllocator>(budget_bytes_);
  } else {
    AllocatorPolicy p;  // PyTorch's defaults
    p.device_limit_bytes = budget_bytes_;
    caching_ = std::make_unique<CachingDeviceAllocator>(p);
  }
}

ServeDevice::~ServeDevice() {
  pipelines_.clear();
  DropRegion();
  models_.clear();
}

void ServeDevice::DropRegion() {
  arenas_.clear();
  if (region_.data != nullptr) munmap(region_.data, static_cast<size_t>(region_.bytes));
  region_ = Region{};
}

int64_t ServeDevice::ArenaLiveBytes() const {
  int64_t sum = 0;
  for (const Arena& a : arenas_) sum += a.allocator->live_bytes();
  return sum;
}

int64_t ServeDevice::ResidentBytes() const {
  return (weights_ != nullptr ? weights_->live_bytes() : 0) + region_.bytes;
}

void ServeDevice::MakeRoom(int64_t bytes, const std::string& keep) {
  while (ResidentBytes() + bytes > budget_bytes_) {
    if (region_.data != nullptr) {
      DropRegion();
      continue;
    }
    auto victim = models_.end();
    for (auto it = models_.begin(); it != models_.end(); ++it) {
      if (it->name != keep) victim = it;  // the least recently used other model
    }
    if (victim == models_.end()) return;
    models_.erase(victim);
  }
}

core::StatusOr<LayoutDeviceAllocator*> ServeDevice::ArenaFor(
    std::shared_ptr<const TemplatePlan> plan, const std::string& keep) {
  auto it = arenas_.begin();
  while (it != arenas_.end() && it->plan != plan) ++it;
  if (it != arenas_.end()) {
    if (it->allocator->Rearm().ok()) return it->allocator.get();
    arenas_.erase(it);  // diverged before: planned again below
  }
  const int64_t need = plan->layout.arena_bytes;
  if (need > region_.bytes) {  // a larger region: every arena is placed in it again
    DropRegion();
    MakeRoom(need, keep);
    if (need > 0) {
      void* p = mmap(nullptr, static_cast<size_t>(need), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
      if (p == MAP_FAILED) {
        return core::Infeasible(
            fmt::format("device {}: cannot map an activation region of {} bytes: {}", index_, need,
                        std::strerror(errno)));
      }
      region_ = Region{static_cast<char*>(p), need};
      region_maps_.fetch_add(1);
    }
  }
  ASSIGN_OR_RETURN(
      std::unique_ptr<LayoutDeviceAllocator> allocator,
      LayoutDeviceAllocator::CreateIn(plan->expanded, plan->layout, region_.data, region_.bytes));
  arenas_.push_front(Arena{std::move(plan), std::move(allocator)});
  return arenas_.front().allocator.get();
}

core::StatusOr<DiffusionPipeline*> ServeDevice::ResidentModel(const TinyModelSpec& spec) {
  auto it = models_.begin();
  while (it != models_.end() && it->name != spec.name) ++it;
  if (it != models_.end()) {
    models_.splice(models_.begin(), models_, it);
    return models_.front().pipeline.get();
  }
  // Room for the weights: their size is known after the model's first load; before it,
  // everything else goes.
  auto known = model_weight_bytes_.find(spec.name);
  MakeRoom(known != model_weight_bytes_.end() ? known->second : budget_bytes_, spec.name);
  auto loaded = DiffusionPipeline::Load(spec, *weights_, host_.get());
  if (!loaded.ok()) {
    Publish(ArenaLiveBytes() + weights_->live_bytes(), 0, ResidentBytes());
    return loaded.status().WithPrefix(fmt::format("device {}: loading {}", index_, spec.name));
  }
  weight_loads_.fetch_add(1);
  model_weight_bytes_[spec.name] = (*loaded)->WeightBytes();
  models_.push_front(Model{spec.name, std::move(*loaded)});
  return models_.front().pipeline.get();
}

void ServeDevice::Publish(int64_t live_bytes, int64_t request_peak_bytes, int64_t reserved_bytes) {
  live_bytes_.store(live_bytes);
  if (request_peak_bytes > peak_bytes_.load()) peak_bytes_.store(request_peak_bytes);
  if (reserved_bytes > peak_reserved_bytes_.load()) peak_reserved_bytes_.store(reserved_bytes);
}

DeviceSnapshot ServeDevice::Snapshot() const {
  DeviceSnapshot s;
  s.live_bytes = live_bytes_.load();
  s.peak_bytes = peak_bytes_.load();
  s.peak_reserved_bytes = peak_reserved_bytes_.load();
  s.requests = requests_.load();
  s.weight_loads = weight_loads_.load();
  s.region_maps = region_maps_.load();
  return s;
}

core::StatusOr<DeviceRun> ServeDevice::Execute(const DiffusionRequest& request) {
  requests_.fetch_add(1);
  ASSIGN_OR_RETURN(const TinyModelSpec spec, TinyModel(request.model));
  DiffusionRequest r = AlwaysOnMitigations(policy_, spec, request);
  if (UsesPlannedMitigations(policy_)) {
    ASSIGN_OR_RETURN(r, Mitigate(spec, request));
  }
  core::StatusOr<DeviceRun> run =
      UsesStaticArena(policy_) ? ExecuteStatic(spec, r) : ExecuteNone(spec, r);
  if (run.ok()) run->mitigations = MitigationLabels(r);
  return run;
}

core::Status ServeDevice::Prepare(const DiffusionRequest& warm_up) {
  DiffusionRequest request = warm_up;
  if (request.prompt.empty()) request.prompt = "warm-up";  // a template's plan ignores it
  ASSIGN_OR_RETURN(const TinyModelSpec spec, TinyModel(request.model));
  RETURN_IF_ERROR(ValidateRequest(spec, request));
  DiffusionRequest r = AlwaysOnMitigations(policy_, spec, request);
  if (UsesPlannedMitigations(policy_)) {
    core::StatusOr<DiffusionRequest> m = Mitigate(spec, request);
    if (!m.ok()) {
      return m.status().code() == core::StatusCode::kInfeasible ? core::Status::Ok() : m.status();
    }
    r = *m;
  }
  if (UsesStaticArena(policy_) && cache_->Find(TemplateKeyString(r)) == nullptr) {
    DeviceRun recorded;
    core::StatusOr<std::shared_ptr<const TemplatePlan>> plan = Plan(spec, r, &recorded);
    if (!plan.ok() && plan.status().code() != core::StatusCode::kInfeasible) {
      return plan.status();
    }
  }
  return core::Status::Ok();
}

core::StatusOr<DiffusionRequest> ServeDevice::Mitigate(const TinyModelSpec& spec,
                                                       const DiffusionRequest& r) {
  const std::string key = TemplateKeyString(r);
  std::shared_ptr<const MitigatedTemplate> m = cache_->FindMitigated(key);
  if (m == nullptr) {
    // Plan on the template's first request (the planner records real runs on the heap,
    // bounded by the host's memory: the unmitigated run may exceed the device budget); later
    // requests of the template reuse it.
    MitigationPlanOptions o;
    o.budget_bytes = budget_bytes_;
    o.repeats = 1;
    o.candidates.offload = host_ != nullptr;
    o.candidates.offload_idle_weights = !UsesStaticArena(policy_);
    o.host = host_.get();
    auto planned = std::make_shared<MitigatedTemplate>();
    auto plan = PlanMitigations(spec, r, o);
    if (!plan.ok()) {
      if (plan.status().code() != core::StatusCode::kInfeasible) return plan.status();
      planned->refused = plan.status().WithPrefix("template " + key);
    } else {
      planned->settings = plan->request;
      planned->verified_peak_bytes = plan->verified_peak_bytes;
      planned->added_s = plan->choice.added_s;
      planned->labels = MitigationLabels(plan->request);
      if (!plan->fits) {
        planned->refused = core::Infeasible(fmt::format(
            "out of device memory: template {} cannot fit the budget of {} bytes with every "
            "mitigation ({} bytes over)",
            key, budget_bytes_, plan->shortfall_bytes));
      }
    }
    m = cache_->InsertMitigated(key, std::move(planned));
  }
  RETURN_IF_ERROR(m->refused);
  return CopyMitigations(m->settings, r);
}

core::StatusOr<DeviceRun> ServeDevice::ExecuteNone(const TinyModelSpec& spec,
                                                   const DiffusionRequest& r) {
  auto it = pipelines_.find(spec.name);
  if (it == pipelines_.end()) {
    auto loaded = DiffusionPipeline::Load(spec, *caching_, host_.get());
    if (!loaded.ok()) {
      Publish(caching_->live_bytes(), 0, caching_->stats().peak_reserved_bytes);
      return loaded.status().WithPrefix(fmt::format("device {}: loading {}", index_, spec.name));
    }
    weight_loads_.fetch_add(1);
    it = pipelines_.emplace(spec.name, std::move(*loaded)).first;
  }
  DeviceRun run;
  run.output.assign(static_cast<size_t>(OutputFloats(r)), 0.0f);
  caching_->ResetPeak();
  const core::Status s = it->second->Run(r, run.output);
  run.peak_bytes = caching_->peak_bytes();
  Publish(caching_->live_bytes(), run.peak_bytes, caching_->stats().peak_reserved_bytes);
  if (!s.ok()) return s.WithPrefix(fmt::format("device {}", index_));
  return run;
}

core::StatusOr<std::shared_ptr<const TemplatePlan>> ServeDevice::Plan(const TinyModelSpec& spec,
                                                                      const DiffusionRequest& r,
                                                                      DeviceRun* recorded) {
  auto plan = std::make_shared<TemplatePlan>();
  // The recording run is this device's memory now, besides the model's weights.
  DropRegion();
  models_.remove_if([&](const Model& m) { return m.name != spec.name; });
  Publish(weights_->live_bytes(), 0, 0);
  ASSIGN_OR_RETURN(DiffusionPipeline * pipeline, ResidentModel(spec));
  const int64_t weight_bytes = weights_->live_bytes();
  // Record within the budget: a template whose plain run does not fit never will.
  auto rec = weight_bytes < budget_bytes_
                 ? RecordActivations(*pipeline, r, budget_bytes_ - weight_bytes, host_.get())
                 : core::StatusOr<RecordedRequest>(core::Infeasible(fmt::format(
                       "out of device memory: the weights take {} bytes of the budget of {}",
                       weight_bytes, budget_bytes_)));
  if (!rec.ok()) {
    if (rec.status().code() != core::StatusCode::kInfeasible) return rec.status();
    plan->refused = rec.status().WithPrefix("template " + TemplateKeyString(r));
  } else {
    plan->trace = std::move(rec->trace);
    ASSIGN_OR_RETURN(plan->expanded, Expand(plan->trace));
    ASSIGN_OR_RETURN(plan->layout, PlanLayout(plan->expanded, "tflite", LayoutOptions{}));
    if (weight_bytes + plan->layout.arena_bytes > budget_bytes_) {
      plan->refused = core::Infeasible(fmt::format(
          "out of device memory: template {} needs its model's {} bytes of weights and a static "
          "arena of {} bytes, the budget is {}",
          TemplateKeyString(r), weight_bytes, plan->layout.arena_bytes, budget_bytes_));
    }
    recorded->output = std::move(rec->output);
    recorded->peak_bytes = weight_bytes + rec->measured_peak_bytes;
  }
  return cache_->Insert(TemplateKeyString(r), std::move(plan));
}

core::StatusOr<DeviceRun> ServeDevice::ExecuteStatic(const TinyModelSpec& spec,
                                                     const DiffusionRequest& r) {
  const std::string key = TemplateKeyString(r);
  std::shared_ptr<const TemplatePlan> plan = cache_->Find(key);
  if (plan == nullptr) {
    DeviceRun recorded;
    ASSIGN_OR_RETURN(plan, Plan(spec, r, &recorded));
    RETURN_IF_ERROR(plan->refused);
    if (!recorded.output.empty()) {
      Publish(weights_->live_bytes(), recorded.peak_bytes, recorded.peak_bytes);
      return recorded;  // the recording run served the request
    }
    // Another device planned the template meanwhile: run from the arena below.
  }
  RETURN_IF_ERROR(plan->refused);
  ASSIGN_OR_RETURN(DiffusionPipeline * pipeline, ResidentModel(spec));
  ASSIGN_OR_RETURN(LayoutDeviceAllocator * arena, ArenaFor(plan, spec.name));
  DeviceRun run;
  run.template_hit = true;
  run.output.assign(static_cast<size_t>(OutputFloats(r)), 0.0f);
  arena->ResetPeak();
  core::Status s = pipeline->Run(r, run.output, arena);
  if (s.ok()) s = arena->status();
  run.peak_bytes = weights_->live_bytes() + arena->peak_bytes();
  const int64_t reserved = ResidentBytes();
  if (!s.ok()) {
    arenas_.remove_if([&](const Arena& a) { return a.allocator.get() == arena; });
  }
  Publish(weights_->live_bytes() + ArenaLiveBytes(), run.peak_bytes, reserved);
  if (!s.ok()) return s.WithPrefix(fmt::format("device {}", index_));
  return run;
}

}  // namespace tessera::xema

#include "kernelflume/instance_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "kernelflume/attention_cluster.h"

namespace tessera::kernelflume {

using core::Status;
using PoolClock = std::chrono::steady_clock;

struct InstancePool::Instance {
  int id = 0;
  std::unique_ptr<models::LlamaModel> model;
  std::unique_ptr<AttentionCluster> cluster;  // its KV: one in-process node
  std::unique_ptr<CompletionEngine> engine;
  bool draining = false;
};

namespace {
double SecondsSince(PoolClock::time_point t) {
  return std::chrono::duration<double>(PoolClock::now() - t).count();
}
const PoolClock::time_point kPoolEpoch = PoolClock::now();
}  // namespace

InstancePool::InstancePool(const InstancePoolOptions& options)
    : options_(options), policy_(options.autoscaler) {}

core::StatusOr<std::unique_ptr<InstancePool>> InstancePool::Start(const InstancePoolOptions& o) {
  RETURN_IF_ERROR(ValidateAutoscalerOptions(o.autoscaler));
  if (o.capacity_tokens < 1 || o.page_tokens < 1 || !(o.tick_s >= 0)) {
    return core::InvalidArgument(
        fmt::format("capacity_tokens {}, page_tokens {} (>= 1) and tick_s {} (>= 0)",
                    o.capacity_tokens, o.page_tokens, o.tick_s));
  }
  std::unique_ptr<InstancePool> pool(new InstancePool(o));
  pool->t0_s_ = SecondsSince(kPoolEpoch);
  for (int i = 0; i < o.autoscaler.min_nodes; ++i) {
    const auto t = PoolClock::now();
    ASSIGN_OR_RETURN(std::unique_ptr<Instance> inst, pool->StartInstance(pool->next_id_++));
    pool->start_ms_.push_back(1e3 * SecondsSince(t));
    pool->instances_.push_back(std::move(inst));
  }
  InstancePool* self = pool.get();
  if (o.tick_s > 0) pool->control_ = std::thread([self] { self->Control(); });
  return pool;
}

InstancePool::~InstancePool() { Stop(); }

void InstancePool::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (control_.joinable()) control_.join();
  std::lock_guard lock(mu_);
  instances_.clear();
}

core::StatusOr<std::unique_ptr<InstancePool::Instance>> InstancePool::StartInstance(int id) {
  auto inst = std::make_unique<Instance>();
  inst->id = id;
  ASSIGN_OR_RETURN(models::LlamaModel model, models::LlamaModel::Open(options_.weights_dir, 0));
  inst->model = std::make_unique<models::LlamaModel>(std::move(model));
  AttentionClusterOptions co;
  co.num_nodes = 1;
  co.transport = "fake";
  co.capacity_tokens = options_.capacity_tokens;
  co.page_tokens = options_.page_tokens;
  ASSIGN_OR_RETURN(inst->cluster, AttentionCluster::Start(AttentionShapeOf(inst->model->config()),
                                                          inst->model->Fingerprint(), co));
  EngineOptions eo = options_.engine;
  eo.max_nodes = 1;
  inst->engine = std::make_unique<CompletionEngine>(*inst->model, *inst->cluster, eo);
  return inst;
}

core::StatusOr<std::shared_ptr<CompletionStream>> InstancePool::Submit(CompletionParams params) {
  std::unique_lock lock(mu_);
  if (stop_ || instances_.empty()) return core::Unavailable("the instance pool is stopping");
  const int64_t need = instances_.front()->engine->ReservedTokens(params);
  if (need > options_.capacity_tokens) {
    return core::Infeasible(
        fmt::format("KV capacity: the request needs {} tokens; an instance holds {}", need,
                    options_.capacity_tokens));
  }
  const uint64_t ticket = next_ticket_++;
  queued_tokens_ += need;
  while (true) {
    if (stop_) return core::Unavailable("the instance pool is stopping");
    if (ticket == head_ticket_) {
      Instance* best = nullptr;
      int64_t best_free = -1;
      for (auto& inst : instances_) {
        if (inst->draining) continue;
        const int64_t free = options_.capacity_tokens - inst->engine->DemandTokens();
        if (free >= need && free > best_free) {
          best = inst.get();
          best_free = free;
        }
      }
      if (best != nullptr) {
        ++head_ticket_;
        queued_tokens_ -= need;
        auto stream = best->engine->Submit(std::move(params));
        cv_.notify_all();
        return stream;
      }
    }
    // Requests end without telling the pool: look again every 10 ms.
    cv_.wait_for(lock, std::chrono::milliseconds(10));
  }
}

InstancePool::Snapshot InstancePool::Load() const {
  std::lock_guard lock(mu_);
  Snapshot s;
  int64_t promised = 0;
  for (const auto& inst : instances_) {
    if (inst->draining) continue;
    ++s.instances;
    promised += inst->engine->DemandTokens();
  }
  s.kv_use = s.instances > 0 ? static_cast<double>(promised) /
                                   static_cast<double>(s.instances * options_.capacity_tokens)
                             : 0;
  s.queued = static_cast<int64_t>(next_ticket_ - head_ticket_);
  s.scale_outs = scale_outs_.load();
  s.scale_ins = scale_ins_.load();
  s.start_error = start_error_;
  return s;
}

std::vector<double> InstancePool::start_ms() const {
  std::lock_guard lock(mu_);
  return start_ms_;
}

void InstancePool::Control() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::duration<double>(options_.tick_s), [&] { return stop_; });
    if (stop_) break;
    lock.unlock();
    Tick();
    lock.lock();
  }
}

void InstancePool::Tick() {
  std::unique_lock lock(mu_);
  if (stop_) return;
  // Retire drained instances whose requests have all ended.
  std::vector<std::unique_ptr<Instance>> gone;
  for (auto it = instances_.begin(); it != instances_.end();) {
    const EngineMetrics m = (*it)->engine->Metrics();
    if ((*it)->draining && m.active == 0 && m.queued == 0) {
      gone.push_back(std::move(*it));
      it = instances_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<WeightNode::NodeLoad> loads;
  int64_t demand = queued_tokens_;
  for (const auto& inst : instances_) {
    if (inst->draining) continue;
    const int64_t promised = inst->engine->DemandTokens();
    loads.push_back({inst->id, options_.capacity_tokens, promised, 0.0});
    demand += promised;
  }
  const AutoscaleDecision d = policy_.Decide(SecondsSince(kPoolEpoch) - t0_s_, loads, demand);
  if (d.kind == AutoscaleDecision::Kind::kScaleIn) {
    for (auto& inst : instances_) {
      if (inst->id == d.node) inst->draining = true;
    }
    ++scale_ins_;
  }
  const bool grow = d.kind == AutoscaleDecision::Kind::kScaleOut;
  const int id = grow ? next_id_++ : -1;
  lock.unlock();
  gone.clear();  // destroys retired instances outside the lock
  if (!grow) return;
  const auto t = PoolClock::now();
  auto inst = StartInstance(id);
  const double ms = 1e3 * SecondsSince(t);
  lock.lock();
  if (inst.ok()) {
    instances_.push_back(std::move(*inst));
    start_ms_.push_back(ms);
    ++scale_outs_;
  } else {
    start_error_ = inst.status().ToString();
  }
  policy_.NoteScaledOut(SecondsSince(kPoolEpoch) - t0_s_);
  cv_.notify_all();
}

}  // namespace tessera::kernelflume

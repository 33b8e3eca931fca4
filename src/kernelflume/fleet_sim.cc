#include "kernelflume/fleet_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <unordered_map>

#include "core/stats.h"
#include "kernelflume/decode_cost_model.h"
#include "kernelflume/kv_prefix_cache.h"
#include "sim/event_queue.h"

namespace tessera::kernelflume {

using core::Status;

const char* FleetSystemName(FleetSystem s) {
  return s == FleetSystem::kKernelFlume ? "kernelflume" : "serverlessllm";
}

Status ValidateFleetSimOptions(const FleetSimOptions& o) {
  auto positive = [](const char* name, double v) {
    return v > 0 && std::isfinite(v)
               ? Status::Ok()
               : core::InvalidArgument(fmt::format("{}: got {}, must be > 0", name, v));
  };
  if (o.weight_gpus < 1) {
    return core::InvalidArgument(fmt::format("weight_gpus: got {}, must be >= 1", o.weight_gpus));
  }
  if (o.weight_nodes < 1) {
    return core::InvalidArgument(fmt::format("weight_nodes: got {}, must be >= 1", o.weight_nodes));
  }
  if (o.max_gpus < 0) {
    return core::InvalidArgument(fmt::format("max_gpus: got {}, must be >= 0", o.max_gpus));
  }
  if (o.max_weight_nodes < 0) {
    return core::InvalidArgument(
        fmt::format("max_weight_nodes: got {}, must be >= 0", o.max_weight_nodes));
  }
  if (o.max_batch < 1) {
    return core::InvalidArgument(fmt::format("max_batch: got {}, must be >= 1", o.max_batch));
  }
  RETURN_IF_ERROR(positive("tick_s", o.tick_s));
  RETURN_IF_ERROR(positive("window_s", o.window_s));
  RETURN_IF_ERROR(positive("chunk_s", o.chunk_s));
  RETURN_IF_ERROR(positive("cache_ttl_s", o.cache_ttl_s));
  RETURN_IF_ERROR(positive("attn_price_factor", o.attn_price_factor));
  if (!(o.tpot_target_ms >= 0 && std::isfinite(o.tpot_target_ms))) {
    return core::InvalidArgument(
        fmt::format("tpot_target_ms: got {}, must be >= 0", o.tpot_target_ms));
  }
  RETURN_IF_ERROR(positive("dram_bytes_per_s", o.dram_bytes_per_s));
  RETURN_IF_ERROR(positive("ssd_bytes_per_s", o.ssd_bytes_per_s));
  for (auto [name, v] :
       {std::pair{"attn_start_s", o.attn_start_s}, std::pair{"route_install_s", o.route_install_s},
        std::pair{"instance_init_s", o.instance_init_s}}) {
    if (!(v >= 0 && std::isfinite(v))) {
      return core::InvalidArgument(fmt::format("{}: got {}, must be >= 0", name, v));
    }
  }
  AutoscalerOptions a = o.autoscaler;
  if (a.max_nodes == 0) a.max_nodes = std::max(1, a.min_nodes);  // filled in from the cluster
  return ValidateAutoscalerOptions(a);
}

namespace {

// Event kinds, in the order they run at equal times: a step's end frees KV before a node joins,
// both before an arrival is admitted, and the autoscaler sees the result.
enum FleetEvent : int { kFleetStepDone = 0, kFleetNodeReady, kFleetArrival, kFleetTick };
constexpr double kWeightBytesPerParam = 2;  // bf16

struct Request {
  const workload::TraceRequest* t = nullptr;
  int64_t prompt = 0;        // tokens to hold before decoding (grows when preempted)
  int64_t left = 0;          // output tokens still to generate
  int64_t kv = 0;            // KV tokens held while admitted
  int64_t cached = 0;        // prompt tokens the admission found cached
  bool reuse_prefix = true;  // false after a preemption (recompute)
  double first_token_s = -1;
  double entered_s = 0;  // when it joined the queue (after any hold)
  int group = -1;
  std::vector<int> dependents;  // later turns of the session, held until this one finishes
};

// Where KV lives: the kernelflume pool or one instance.
struct Domain {
  int64_t capacity = 0;  // tokens, of active nodes
  int64_t active = 0;    // tokens held by admitted requests
  KvPrefixCache cache;
  // Room for `tokens` more after evicting cache; evicts as needed.
  bool MakeRoom(int64_t tokens) {
    const int64_t free = capacity - active - cache.tokens();
    if (free >= tokens) return true;
    if (capacity - active < tokens) return false;
    cache.Evict(tokens - free);
    return true;
  }
};

// A weight node or an instance: runs one batch.
struct Group {
  int domain = 0;
  int node = -1;
  bool up = false, busy = false;
  std::vector<int> running, prefilling, admitted;  // request indices, in admission order
  double stall_s = 0;                              // prefill time the running batch waited
  size_t stalled = 0;                              // how many of the running requests waited for it
  double prefill_s = 0;         // finished prefills' time (the autoscaler's busy time)
  double prefill_start_s = -1;  // the running prefill's start; -1: none
  double busy_at_tick_s = 0;    // PrefillBusy at the last autoscaler tick
  double slowest_step_s = 0;    // the slowest decode step since the last tick
  double PrefillBusy(double now) const {
    return prefill_s + (prefill_start_s >= 0 ? now - prefill_start_s : 0);
  }
  size_t load() const { return running.size() + prefilling.size() + admitted.size(); }
};

// What a node is: kernelflume's weight nodes and attention nodes, serverlessllm's instances.
enum class Tier { kWeight, kAttention, kInstance };

struct Node {
  Tier tier = Tier::kInstance;
  int gpus = 0;
  double usd_per_gpu_s = 0;
  double start_s = 0, release_s = -1;
  bool ready = false;
  int64_t capacity = 0;
  int group = -1;  // weight node, instance
  int machine = 0;
  sim::EventId ready_event = -1;
};

struct WindowAcc {
  std::vector<double> tpot_s, weight;
  double gpu_s = 0;
  int gpus_max = 0;
  double kv_use_sum = 0;
  int kv_use_n = 0;
};

class FleetSim {
 public:
  FleetSim(const std::vector<workload::TraceRequest>& trace, const models::LlamaConfig& model,
           const hw::Cluster& cluster, FleetSystem system, const FleetSimOptions& o,
           core::TraceWriter* perfetto)
      : trace_(trace),
        model_(model),
        cluster_(cluster),
        system_(system),
        o_(o),
        perfetto_(perfetto),
        kv_policy_(o.autoscaler),
        weight_policy_(o.autoscaler) {}

  core::StatusOr<FleetRunResult> Run();

 private:
  bool kf() const { return system_ == FleetSystem::kKernelFlume; }
  const hw::Device& AttnDevice() const {
    return o_.attn_device.name.empty() ? cluster_.device : o_.attn_device;
  }
  Status Setup();
  int AddNode(Tier tier, double now, bool warm_at_zero);
  // One autoscaler decision for a tier, carried out.
  void ScaleTier(Tier tier, Autoscaler& policy, double now);
  void NodeReady(int n);
  void ReleaseNode(int n, double now);
  void Tick();
  void TryAdmit();
  void StartGroup(int g);
  void GroupDone(int g, int64_t steps, double step_s);
  void Preempt(int g);
  // An arrival: held when an earlier turn of its session is still in flight, else Enter.
  void Arrive(int i);
  // Queues a request (or rejects it) and admits what fits.
  void Enter(int i);
  // Takes a completed request out of flight; its held turns enter.
  void Complete(int i);
  int64_t FullBlocks(const workload::TraceRequest& t) const {
    return std::min<int64_t>(t.input_length / workload::kTraceBlockTokens,
                             static_cast<int64_t>(t.hash_ids.size()));
  }
  // The group's step time with every running request `extra` tokens longer.
  double StepSeconds(const Group& g, double extra) const;
  int AttentionNodesUp() const;
  // A prefill on a weight node (its history on the attention nodes) or an instance.
  double Prefill(int64_t new_tokens, int64_t cached_tokens) const {
    return kf() ? KernelFlumePrefillSeconds(model_, cluster_, AttnDevice(), new_tokens,
                                            cached_tokens, AttentionNodesUp(), o_.weight_gpus)
                : PrefillSeconds(model_, cluster_, new_tokens, cached_tokens, o_.weight_gpus);
  }
  int ActiveGpus() const { return gpus_now_; }
  void SetGpus(int delta);
  void IntegrateGpus(double until_s);
  WindowAcc& Window(double t);

  const std::vector<workload::TraceRequest>& trace_;
  const models::LlamaConfig& model_;
  const hw::Cluster& cluster_;
  FleetSystem system_;
  FleetSimOptions o_;
  core::TraceWriter* perfetto_;
  Autoscaler kv_policy_;      // attention nodes or instances
  Autoscaler weight_policy_;  // kernelflume's weight nodes
  sim::EventQueue q_;
  FleetRunResult r_;

  int64_t node_capacity_ = 0;  // tokens per attention node or instance
  int total_gpus_ = 0;         // the fleet's GPUs (max_gpus of the cluster)
  int machines_ = 0;           // cluster nodes they span
  double weight_bytes_ = 0;
  std::vector<Request> reqs_;
  std::deque<int> queue_;
  std::vector<Domain> domains_;
  std::vector<Group> groups_;
  std::vector<Node> nodes_;
  std::vector<int> machine_loads_;  // model loads per machine (a cluster node)
  std::vector<int> machine_gpus_;   // GPUs in use per machine
  int64_t finished_ = 0;            // completed + rejected
  int gpus_now_ = 0;
  double gpus_since_ = 0;
  int64_t largest_request_ = 0;                 // prompt + output a place can hold at most
  std::unordered_map<int64_t, int> in_flight_;  // a request's last full block id -> request
  std::vector<WindowAcc> windows_;
  std::vector<double> all_tpot_s_, all_weight_, ttft_s_;
};

WindowAcc& FleetSim::Window(double t) {
  const size_t w = static_cast<size_t>(std::max(0.0, t) / o_.window_s);
  if (windows_.size() <= w) windows_.resize(w + 1);
  return windows_[w];
}

// Integrates the GPU count over time into the windows, up to `now`.
void FleetSim::IntegrateGpus(double now) {
  for (double t = gpus_since_; t < now;) {
    WindowAcc& w = Window(t);
    const double end = std::min(now, (std::floor(t / o_.window_s) + 1) * o_.window_s);
    w.gpu_s += gpus_now_ * (end - t);
    w.gpus_max = std::max(w.gpus_max, gpus_now_);
    t = end;
  }
  gpus_since_ = std::max(gpus_since_, now);
}

// Changes the GPU count at the current time.
void FleetSim::SetGpus(int delta) {
  const double now = q_.now_s();
  IntegrateGpus(now);
  gpus_now_ += delta;
  Window(now).gpus_max = std::max(Window(now).gpus_max, gpus_now_);
  r_.gpus_max = std::max(r_.gpus_max, gpus_now_);
}

Status FleetSim::Setup() {
  RETURN_IF_ERROR(model_.Validate());
  const int w = o_.weight_gpus;
  if (w > cluster_.ranks_per_node) {
    return core::InvalidArgument(fmt::format("weight_gpus: got {}, must be <= {} (a {} node)", w,
                                             cluster_.ranks_per_node, cluster_.name));
  }
  const double kv_per_token = static_cast<double>(model_.KvBytesPerToken(2));
  weight_bytes_ = static_cast<double>(model_.ParamCount()) * kWeightBytesPerParam;
  const double usable = cluster_.usable_memory_bytes();
  if (weight_bytes_ / w > usable) {
    return core::FailedPrecondition(fmt::format(
        "{}: {:.1f} GiB of bf16 weights per GPU over {} GPU(s), but a {} holds {:.1f} GiB usable "
        "(raise the weight GPUs)",
        model_.name, weight_bytes_ / w / (1 << 30), w, cluster_.device.name, usable / (1 << 30)));
  }
  total_gpus_ = cluster_.nodes * cluster_.ranks_per_node;
  if (o_.max_gpus > 0) total_gpus_ = std::min(total_gpus_, o_.max_gpus);
  machines_ = (total_gpus_ + cluster_.ranks_per_node - 1) / cluster_.ranks_per_node;
  AutoscalerOptions ao = o_.autoscaler;
  int most = 0;
  if (kf()) {
    const hw::Device& a = AttnDevice();
    node_capacity_ = static_cast<int64_t>(a.memory_bytes * a.memory_usable_fraction / kv_per_token);
    most = std::min(64, total_gpus_ - o_.weight_nodes * w);
    if (most < 1) {
      return core::FailedPrecondition(
          fmt::format("{} weight node(s) of {} GPU(s) leave no GPU of {}'s {} for attention",
                      o_.weight_nodes, w, cluster_.name, total_gpus_));
    }
  } else {
    node_capacity_ = static_cast<int64_t>((usable * w - weight_bytes_) / kv_per_token);
    most = std::min(64, total_gpus_ / w);
    if (node_capacity_ < 1) {
      return core::FailedPrecondition(
          fmt::format("{} on {} {}(s) leaves no memory for KV (raise the weight GPUs)", model_.name,
                      w, cluster_.device.name));
    }
  }
  if (ao.max_nodes == 0 || ao.max_nodes > most) ao.max_nodes = most;
  if (ao.min_nodes > ao.max_nodes) {
    return core::InvalidArgument(fmt::format("min_nodes: got {}, but {} holds at most {} {}",
                                             ao.min_nodes, cluster_.name, ao.max_nodes,
                                             kf() ? "attention nodes" : "instances"));
  }
  RETURN_IF_ERROR(ValidateAutoscalerOptions(ao));
  o_.autoscaler = ao;
  kv_policy_ = Autoscaler(ao);
  AutoscalerOptions wo = ao;
  wo.min_nodes = o_.weight_nodes;
  wo.max_nodes = std::min(64, (total_gpus_ - 1) / w);
  if (o_.max_weight_nodes > 0) wo.max_nodes = std::min(wo.max_nodes, o_.max_weight_nodes);
  if (wo.max_nodes < o_.weight_nodes) {
    return core::InvalidArgument(
        fmt::format("weight_nodes: got {}, but at most {} fit beside an attention node",
                    o_.weight_nodes, wo.max_nodes));
  }
  weight_policy_ = Autoscaler(wo);
  machine_loads_.assign(machines_, 0);
  machine_gpus_.assign(machines_, 0);
  if (kf()) {
    domains_.resize(1);
    for (int i = 0; i < o_.weight_nodes; ++i) AddNode(Tier::kWeight, 0, true);
    for (int i = 0; i < ao.min_nodes; ++i) AddNode(Tier::kAttention, 0, true);
  } else {
    for (int i = 0; i < ao.min_nodes; ++i) AddNode(Tier::kInstance, 0, true);
  }
  return Status::Ok();
}

// Requests a node at `now` (billed from now); ready at once when warm_at_zero (and its machine
// holds the model from then on).
int FleetSim::AddNode(Tier tier, double now, bool warm_at_zero) {
  const int n = static_cast<int>(nodes_.size());
  Node node;
  node.tier = tier;
  node.start_s = now;
  const bool weights = tier != Tier::kAttention;
  node.gpus = weights ? o_.weight_gpus : 1;
  node.usd_per_gpu_s = weights ? cluster_.device.price_usd_per_hour / 3600
                               : AttnDevice().price_usd_per_hour * o_.attn_price_factor / 3600;
  node.capacity = tier == Tier::kWeight ? o_.max_batch : node_capacity_;
  // The machine with room, preferring one that loaded the model (warm), then the emptiest.
  int best = 0;
  auto key = [&](int i) {
    const bool fits = cluster_.ranks_per_node - machine_gpus_[i] >= node.gpus;
    return std::tuple(fits, weights && machine_loads_[i] > 0, -machine_gpus_[i]);
  };
  for (int m = 1; m < machines_; ++m) {
    if (key(m) > key(best)) best = m;
  }
  node.machine = best;
  machine_gpus_[best] += node.gpus;
  double start_s = o_.attn_start_s + o_.route_install_s;
  if (weights) {
    const bool warm = machine_loads_[best] > 0;
    machine_loads_[best]++;
    if (!warm_at_zero) (warm ? r_.warm_starts : r_.cold_starts)++;
    start_s =
        weight_bytes_ / (warm ? o_.dram_bytes_per_s : o_.ssd_bytes_per_s) + o_.instance_init_s;
    node.group = static_cast<int>(groups_.size());
    Group g;
    g.node = n;
    if (tier == Tier::kInstance) {
      g.domain = static_cast<int>(domains_.size());
      domains_.emplace_back();
    }
    groups_.push_back(std::move(g));
  }
  nodes_.push_back(node);
  SetGpus(node.gpus);
  if (perfetto_ != nullptr) {
    const char* what = tier == Tier::kWeight      ? "weight node"
                       : tier == Tier::kAttention ? "attention node"
                                                  : "instance";
    perfetto_->NameTrack(n, fmt::format("{} {}", what, n));
  }
  if (warm_at_zero) {
    NodeReady(n);
  } else {
    nodes_[n].ready_event =
        q_.Schedule(now + start_s, kFleetNodeReady, [this, n] { NodeReady(n); });
  }
  return n;
}

void FleetSim::NodeReady(int n) {
  Node& node = nodes_[n];
  node.ready = true;
  node.ready_event = -1;
  if (perfetto_ != nullptr && q_.now_s() > node.start_s) {
    perfetto_->Span(n, "starting", "node", node.start_s, q_.now_s() - node.start_s);
  }
  if (node.tier == Tier::kAttention) {
    domains_[0].capacity += node.capacity;
  } else {
    if (node.tier == Tier::kInstance) domains_[groups_[node.group].domain].capacity = node.capacity;
    groups_[node.group].up = true;
  }
  TryAdmit();
}

void FleetSim::ReleaseNode(int n, double now) {
  Node& node = nodes_[n];
  if (node.ready_event >= 0) q_.Cancel(node.ready_event);
  if (perfetto_ != nullptr && node.ready) {
    perfetto_->Span(n, "up", "node", node.start_s, now - node.start_s);
  }
  if (node.ready && node.tier == Tier::kAttention) {
    Domain& d = domains_[0];
    d.capacity -= node.capacity;
    d.cache.Evict(d.active + d.cache.tokens() - d.capacity);
  } else if (node.tier == Tier::kInstance) {
    Domain& d = domains_[groups_[node.group].domain];
    d.capacity = 0;
    d.cache.Clear();
  }
  if (node.group >= 0) groups_[node.group].up = false;
  machine_gpus_[node.machine] -= node.gpus;
  node.ready = false;
  node.release_s = now;
  SetGpus(-node.gpus);
}

void FleetSim::ScaleTier(Tier tier, Autoscaler& policy, double now) {
  // Each node's load as a share of what it can hold, in parts per million: the autoscaler's
  // "KV use" is then the tier's mean share (see the header).
  constexpr double kParts = 1e6;
  const double tpot_target_s = o_.tpot_target_ms / 1e3;
  std::vector<WeightNode::NodeLoad> loads;
  double demand = 0;
  const Domain* pool = kf() ? &domains_[0] : nullptr;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    Node& node = nodes_[n];
    if (node.tier != tier || node.release_s >= 0) continue;
    WeightNode::NodeLoad l;
    l.id = static_cast<int32_t>(n);
    l.capacity_tokens = static_cast<int64_t>(kParts);
    double share = 0;
    if (node.ready && tier == Tier::kAttention) {
      share = pool->capacity > 0
                  ? static_cast<double>(pool->active + pool->cache.tokens()) / pool->capacity
                  : 0;
      if (tpot_target_s > 0) {
        for (const Group& g : groups_) share = std::max(share, g.slowest_step_s / tpot_target_s);
      }
    } else if (node.ready) {
      Group& g = groups_[node.group];
      const double busy = g.PrefillBusy(now);
      const double prefill_share = (busy - g.busy_at_tick_s) / o_.tick_s;
      g.busy_at_tick_s = busy;
      share = std::max(
          prefill_share,
          tier == Tier::kWeight
              ? static_cast<double>(g.load()) / static_cast<double>(o_.max_batch)
              : static_cast<double>(domains_[g.domain].active + domains_[g.domain].cache.tokens()) /
                    node.capacity);
      if (tier == Tier::kInstance && tpot_target_s > 0) {
        share = std::max(share, g.slowest_step_s / tpot_target_s);
      }
    }
    l.live_tokens = static_cast<int64_t>(share * kParts);
    demand += static_cast<double>(l.live_tokens);
    loads.push_back(l);
  }
  // The queue counts, each request as the share of a node it needs: its prompt's KV, a batch
  // slot, or its prefill (uncached tokens) over a tick.
  for (int i : queue_) {
    const Request& rq = reqs_[i];
    const double kv = static_cast<double>(rq.prompt) / static_cast<double>(node_capacity_);
    if (tier == Tier::kAttention) {
      demand += kParts * kv;
      continue;
    }
    const int64_t hit =
        kf() && rq.reuse_prefix ? pool->cache.Lookup(rq.t->hash_ids, rq.prompt).tokens : 0;
    const double prefill = Prefill(rq.prompt - hit, hit) / o_.tick_s;
    demand += kParts *
              std::max(prefill, tier == Tier::kWeight ? 1 / static_cast<double>(o_.max_batch) : kv);
  }
  const AutoscaleDecision d = policy.Decide(now, loads, static_cast<int64_t>(demand));
  if (d.kind == AutoscaleDecision::Kind::kScaleOut) {
    const int gpus = tier == Tier::kAttention ? 1 : o_.weight_gpus;
    if (gpus_now_ + gpus > total_gpus_) return;  // the cluster is full
    AddNode(tier, now, false);
    policy.NoteScaledOut(now);
    r_.scale_outs++;
  } else if (d.kind == AutoscaleDecision::Kind::kScaleIn) {
    const Node& node = nodes_[d.node];
    bool can = true;
    if (node.ready && node.tier == Tier::kAttention) {
      can = pool->active <= pool->capacity - node.capacity;
    } else if (node.ready) {
      const Group& g = groups_[node.group];
      can = g.load() == 0 && !g.busy;
    }
    if (can) {
      ReleaseNode(d.node, now);
      r_.scale_ins++;
    }
  }
}

void FleetSim::Tick() {
  if (finished_ == static_cast<int64_t>(reqs_.size())) return;
  const double now = q_.now_s();
  int64_t active = 0, capacity = 0;
  for (const Domain& d : domains_) {
    active += d.active;
    capacity += d.capacity;
  }
  for (Domain& d : domains_) d.cache.EvictInsertedBefore(now - o_.cache_ttl_s);
  WindowAcc& w = Window(now);
  w.kv_use_sum += capacity > 0 ? static_cast<double>(active) / capacity : 0;
  w.kv_use_n++;
  if (kf()) {
    ScaleTier(Tier::kAttention, kv_policy_, now);
    ScaleTier(Tier::kWeight, weight_policy_, now);
  } else {
    ScaleTier(Tier::kInstance, kv_policy_, now);
  }
  for (Group& g : groups_) g.slowest_step_s = 0;
  q_.Schedule(now + o_.tick_s, kFleetTick, [this] { Tick(); });
}

void FleetSim::TryAdmit() {
  while (!queue_.empty()) {
    const int i = queue_.front();
    Request& rq = reqs_[i];
    int g_best = -1;
    KvPrefixCache::Hit hit;
    if (kf()) {
      for (size_t g = 0; g < groups_.size(); ++g) {
        const Group& gr = groups_[g];
        if (!gr.up || gr.load() >= static_cast<size_t>(o_.max_batch)) continue;
        if (g_best < 0 || gr.load() < groups_[g_best].load()) g_best = static_cast<int>(g);
      }
      if (g_best >= 0 && rq.reuse_prefix) hit = domains_[0].cache.Lookup(rq.t->hash_ids, rq.prompt);
    } else {
      int64_t best_free = -1;
      for (size_t g = 0; g < groups_.size(); ++g) {
        const Group& gr = groups_[g];
        const Domain& d = domains_[gr.domain];
        if (!gr.up || gr.load() >= static_cast<size_t>(o_.max_batch)) continue;
        const int64_t free = d.capacity - d.active;
        if (free < rq.prompt + 1) continue;
        const KvPrefixCache::Hit h =
            rq.reuse_prefix ? d.cache.Lookup(rq.t->hash_ids, rq.prompt) : KvPrefixCache::Hit{};
        if (g_best < 0 || h.tokens > hit.tokens || (h.tokens == hit.tokens && free > best_free)) {
          g_best = static_cast<int>(g);
          hit = h;
          best_free = free;
        }
      }
    }
    if (g_best < 0) return;
    Group& g = groups_[g_best];
    Domain& d = domains_[g.domain];
    // The prompt and its first output token (the cached prefix counts: it is taken over).
    if (d.capacity - d.active < rq.prompt + 1) return;
    if (hit.entry >= 0) d.cache.Take(hit.entry);
    d.MakeRoom(rq.prompt + 1);
    queue_.pop_front();
    d.active += rq.prompt;
    rq.kv = rq.prompt;
    rq.cached = hit.tokens;
    rq.group = g_best;
    g.admitted.push_back(i);
    if (!g.busy) StartGroup(g_best);
  }
}

int FleetSim::AttentionNodesUp() const {
  int up = 0;
  for (const Node& n : nodes_) up += n.ready && n.tier == Tier::kAttention ? 1 : 0;
  return up;
}

double FleetSim::StepSeconds(const Group& g, double extra) const {
  const double b = static_cast<double>(g.running.size());
  double kv = b * extra;
  for (int i : g.running) kv += static_cast<double>(reqs_[i].kv);
  FleetStep step{static_cast<int64_t>(g.running.size()), kv, 1, o_.weight_gpus};
  if (kf()) {
    // Attention nodes serve every weight node: they read the whole pool's KV each step.
    step.kv_tokens = std::max(kv, static_cast<double>(domains_[0].active) + b * extra);
    step.attn_nodes = std::max(1, AttentionNodesUp());
    return KernelFlumeStepSeconds(model_, cluster_, AttnDevice(), step, o_.pipelined);
  }
  return InstanceStepSeconds(model_, cluster_, step);
}

// Starts the group's next phase: prefill of the admitted requests, else a decode chunk.
void FleetSim::StartGroup(int gi) {
  Group& g = groups_[gi];
  const double now = q_.now_s();
  if (!g.admitted.empty()) {
    double s = 0;
    for (int i : g.admitted) {
      const Request& rq = reqs_[i];
      s += Prefill(rq.prompt - rq.cached, rq.cached);
      r_.prefill_tokens += rq.prompt - rq.cached;
      r_.cached_tokens += rq.cached;
    }
    g.prefill_start_s = now;
    g.prefilling = std::move(g.admitted);
    g.admitted.clear();
    g.busy = true;
    if (perfetto_ != nullptr) {
      perfetto_->Span(g.node, "prefill", "prefill", now, s,
                      core::Json{{"requests", g.prefilling.size()}});
    }
    q_.Schedule(now + s, kFleetStepDone, [this, gi, s] { GroupDone(gi, 0, s); });
    return;
  }
  if (g.running.empty()) {
    g.busy = false;
    return;
  }
  Domain& d = domains_[g.domain];
  const int64_t b = static_cast<int64_t>(g.running.size());
  const double step0 = StepSeconds(g, 0);
  int64_t left = reqs_[g.running.front()].left;
  for (int i : g.running) left = std::min(left, reqs_[i].left);
  int64_t k = std::clamp<int64_t>(static_cast<int64_t>(o_.chunk_s / step0), 1, left);
  // The KV must grow by b tokens a step.
  const int64_t room = d.capacity - d.active;
  if (room < b * k) {
    d.cache.Evict(d.active + d.cache.tokens() + b * k - d.capacity);
    k = std::min(k, room / b);
  }
  if (k == 0) {
    Preempt(gi);
    StartGroup(gi);
    return;
  }
  // The step time at the chunk's middle (the KV grows linearly).
  const double step = k == 1 ? step0 : StepSeconds(g, (k - 1) / 2.0);
  for (int i : g.running) reqs_[i].kv += k;
  d.active += b * k;
  g.busy = true;
  g.slowest_step_s = std::max(g.slowest_step_s, step);
  q_.Schedule(now + k * step, kFleetStepDone, [this, gi, k, step] { GroupDone(gi, k, step); });
}

void FleetSim::Preempt(int gi) {
  Group& g = groups_[gi];
  const int i = g.running.back();
  g.running.pop_back();
  Request& rq = reqs_[i];
  Domain& d = domains_[g.domain];
  d.active -= rq.kv;
  const int64_t generated = rq.t->output_length - rq.left;
  r_.preemptions++;
  r_.recomputed_tokens += rq.kv;
  rq.prompt = rq.t->input_length + generated;
  rq.kv = 0;
  rq.reuse_prefix = false;
  rq.group = -1;
  queue_.push_front(i);
}

void FleetSim::GroupDone(int gi, int64_t steps, double step_s) {
  Group& g = groups_[gi];
  const double now = q_.now_s();
  Domain& d = domains_[g.domain];
  std::vector<int> done;
  auto finish = [&](int i) {
    Request& rq = reqs_[i];
    d.active -= rq.kv;
    d.cache.Insert(rq.t->hash_ids, rq.t->input_length, rq.kv, now);
    rq.kv = 0;
    done.push_back(i);
  };
  if (steps == 0) {  // a prefill ended: the running batch waited for it
    g.prefill_s += now - g.prefill_start_s;
    g.prefill_start_s = -1;
    if (!g.running.empty()) {
      if (g.stall_s == 0) g.stalled = g.running.size();
      g.stall_s += step_s;
    }
    for (int i : g.prefilling) {
      Request& rq = reqs_[i];
      if (rq.first_token_s < 0) {
        rq.first_token_s = now;
        ttft_s_.push_back(now - rq.entered_s);
      }
      rq.left--;
      rq.kv++;
      d.active++;
      if (rq.left == 0) {
        finish(i);
      } else {
        g.running.push_back(i);
      }
    }
    g.prefilling.clear();
  } else {
    const double b = static_cast<double>(g.running.size());
    const double stalled = static_cast<double>(std::min(g.stalled, g.running.size()));
    WindowAcc& w = Window(now);
    auto sample = [&](double tpot_s, double weight) {
      if (weight <= 0) return;
      w.tpot_s.push_back(tpot_s);
      w.weight.push_back(weight);
      all_tpot_s_.push_back(tpot_s);
      all_weight_.push_back(weight);
    };
    sample(step_s + g.stall_s, g.stall_s > 0 ? stalled : 0);
    sample(step_s, b * static_cast<double>(steps) - (g.stall_s > 0 ? stalled : 0));
    g.stall_s = 0;
    g.stalled = 0;
    std::vector<int> still;
    for (int i : g.running) {
      reqs_[i].left -= steps;
      if (reqs_[i].left == 0) {
        finish(i);
      } else {
        still.push_back(i);
      }
    }
    g.running = std::move(still);
  }
  g.busy = false;
  for (int i : done) Complete(i);
  TryAdmit();
  if (!g.busy) StartGroup(gi);
}

void FleetSim::Arrive(int i) {
  const workload::TraceRequest& t = *reqs_[i].t;
  int before = -1;
  for (int64_t b = static_cast<int64_t>(t.hash_ids.size()) - 1; b >= 0 && before < 0; --b) {
    auto it = in_flight_.find(t.hash_ids[b]);
    if (it == in_flight_.end() || FullBlocks(*reqs_[it->second].t) != b + 1) continue;
    // A later turn holds the earlier turn's prompt and its answer; a request that only shares
    // the blocks (a common system prompt) is not waiting for anything.
    const workload::TraceRequest& p = *reqs_[it->second].t;
    if (t.input_length >= p.input_length + p.output_length) before = it->second;
  }
  // In flight from now, held or not: a later turn waits for this one, not an earlier one.
  const int64_t blocks = FullBlocks(t);
  if (blocks > 0) in_flight_[t.hash_ids[blocks - 1]] = i;
  if (before >= 0) {
    reqs_[before].dependents.push_back(i);
    r_.held_turns++;
    return;
  }
  Enter(i);
}

void FleetSim::Enter(int i) {
  Request& rq = reqs_[i];
  rq.entered_s = q_.now_s();
  if (rq.t->input_length + rq.t->output_length > largest_request_) {
    r_.rejected++;
    Complete(i);
    return;
  }
  queue_.push_back(i);
  TryAdmit();
}

void FleetSim::Complete(int i) {
  Request& rq = reqs_[i];
  if (rq.kv == 0 && rq.left == 0) {
    r_.completed++;
    r_.output_tokens += rq.t->output_length;
  }
  const int64_t blocks = FullBlocks(*rq.t);
  if (blocks > 0) {
    auto it = in_flight_.find(rq.t->hash_ids[blocks - 1]);
    if (it != in_flight_.end() && it->second == i) in_flight_.erase(it);
  }
  finished_++;
  if (finished_ == static_cast<int64_t>(reqs_.size())) {
    r_.end_s = q_.now_s();
    IntegrateGpus(r_.end_s);
  }
  std::vector<int> held = std::move(rq.dependents);
  for (int d : held) Enter(d);
}

core::StatusOr<FleetRunResult> FleetSim::Run() {
  r_.system = system_;
  r_.requests = static_cast<int64_t>(trace_.size());
  RETURN_IF_ERROR(Setup());
  largest_request_ = kf() ? node_capacity_ * o_.autoscaler.max_nodes : node_capacity_;
  reqs_.resize(trace_.size());
  for (size_t i = 0; i < trace_.size(); ++i) {
    Request& rq = reqs_[i];
    rq.t = &trace_[i];
    rq.prompt = rq.t->input_length;
    rq.left = rq.t->output_length;
    const int idx = static_cast<int>(i);
    q_.Schedule(rq.t->timestamp_ms / 1e3, kFleetArrival, [this, idx] { Arrive(idx); });
  }
  q_.Schedule(0, kFleetTick, [this] { Tick(); });
  r_.events = q_.Run();
  // Bill every node to the end of the run.
  const double end = r_.end_s;
  double gpu_s = 0, usd = 0;
  for (const Node& n : nodes_) {
    const double up = std::max(
        0.0, (n.release_s >= 0 ? std::min(n.release_s, end) : end) - std::min(n.start_s, end));
    gpu_s += up * n.gpus;
    usd += up * n.gpus * n.usd_per_gpu_s;
  }
  r_.gpu_hours = gpu_s / 3600;
  r_.cost_usd = usd;
  r_.usd_per_mtok = r_.output_tokens > 0 ? usd / (r_.output_tokens / 1e6) : 0;
  r_.tpot_p50_ms = core::WeightedPercentile(all_tpot_s_, all_weight_, 50) * 1e3;
  r_.tpot_p99_ms = core::WeightedPercentile(all_tpot_s_, all_weight_, 99) * 1e3;
  r_.ttft_p50_s = core::Percentile(ttft_s_, 50);
  r_.ttft_p99_s = core::Percentile(ttft_s_, 99);
  const size_t used = std::min(windows_.size(), static_cast<size_t>(end / o_.window_s) + 1);
  double total_tokens = 0;
  for (size_t k = 0; k < used; ++k) {
    for (double x : windows_[k].weight) total_tokens += x;
  }
  double lo = 0, hi = 0;
  for (size_t k = 0; k < used; ++k) {
    const WindowAcc& a = windows_[k];
    FleetWindow w;
    w.start_s = k * o_.window_s;
    for (double x : a.weight) w.tokens += x;
    w.tpot_p50_ms = core::WeightedPercentile(a.tpot_s, a.weight, 50) * 1e3;
    w.tpot_p99_ms = core::WeightedPercentile(a.tpot_s, a.weight, 99) * 1e3;
    w.gpus_mean = a.gpu_s / std::min(o_.window_s, std::max(1e-9, end - w.start_s));
    w.gpus_max = a.gpus_max;
    w.kv_use_mean = a.kv_use_n > 0 ? a.kv_use_sum / a.kv_use_n : 0;
    if (w.tokens >= 0.01 * total_tokens / static_cast<double>(used) && w.tokens > 0) {
      lo = lo == 0 ? w.tpot_p99_ms : std::min(lo, w.tpot_p99_ms);
      hi = std::max(hi, w.tpot_p99_ms);
    }
    r_.windows.push_back(w);
  }
  r_.p99_flatness = lo > 0 ? hi / lo : 0;
  if (perfetto_ != nullptr) {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (nodes_[n].ready && nodes_[n].release_s < 0) {
        perfetto_->Span(static_cast<int>(n), "up", "node", nodes_[n].start_s,
                        end - nodes_[n].start_s);
      }
    }
  }
  return r_;
}

}  // namespace

core::StatusOr<FleetRunResult> SimulateFleet(const std::vector<workload::TraceRequest>& trace,
                                             const models::LlamaConfig& model,
                                             const hw::Cluster& cluster, FleetSystem system,
                                             const FleetSimOptions& options,
                                             core::TraceWriter* perfetto) {
  RETURN_IF_ERROR(ValidateFleetSimOptions(options));
  if (trace.empty()) return core::InvalidArgument("trace: no request");
  // Bound the bookkeeping: windows and ticks over the trace's span (its runs end later, but a
  // run that outlasts its trace 100-fold is already a saturated fleet).
  const double span_s = trace.back().timestamp_ms / 1e3 + 3600;
  if (span_s / options.window_s > 1e6) {
    return core::InvalidArgument(fmt::format(
        "window_s: got {}, must give at most 1e6 windows over the trace's {:.0f} s (+1 h)",
        options.window_s, span_s));
  }
  if (span_s / options.tick_s > 1e7) {
    return core::InvalidArgument(
        fmt::format("tick_s: got {}, must give at most 1e7 ticks over the trace's {:.0f} s (+1 h)",
                    options.tick_s, span_s));
  }
  if (!options.attn_device.name.empty()) RETURN_IF_ERROR(hw::Validate(options.attn_device));
  FleetSim sim(trace, model, cluster, system, options, perfetto);
  return sim.Run();
}

core::Json ToJson(const FleetRunResult& r) {
  core::Json windows = core::Json::array();
  for (const FleetWindow& w : r.windows) {
    windows.push_back({{"start_s", w.start_s},
                       {"tokens", w.tokens},
                       {"tpot_p50_ms", w.tpot_p50_ms},
                       {"tpot_p99_ms", w.tpot_p99_ms},
                       {"gpus_mean", w.gpus_mean},
                       {"gpus_max", w.gpus_max},
                       {"kv_use_mean", w.kv_use_mean}});
  }
  return core::Json{{"system", FleetSystemName(r.system)},
                    {"provenance", "modeled"},
                    {"requests", r.requests},
                    {"completed", r.completed},
                    {"rejected", r.rejected},
                    {"output_tokens", r.output_tokens},
                    {"prefill_tokens", r.prefill_tokens},
                    {"cached_tokens", r.cached_tokens},
                    {"preemptions", r.preemptions},
                    {"recomputed_tokens", r.recomputed_tokens},
                    {"scale_outs", r.scale_outs},
                    {"scale_ins", r.scale_ins},
                    {"cold_starts", r.cold_starts},
                    {"warm_starts", r.warm_starts},
                    {"gpus_max", r.gpus_max},
                    {"end_s", r.end_s},
                    {"gpu_hours", r.gpu_hours},
                    {"cost_usd", r.cost_usd},
                    {"usd_per_mtok", r.usd_per_mtok},
                    {"tpot_p50_ms", r.tpot_p50_ms},
                    {"tpot_p99_ms", r.tpot_p99_ms},
                    {"ttft_p50_s", r.ttft_p50_s},
                    {"ttft_p99_s", r.ttft_p99_s},
                    {"p99_flatness", r.p99_flatness},
                    {"held_turns", r.held_turns},
                    {"events", r.events},
                    {"windows", windows}};
}

double FleetCostReduction(const FleetRunResult& kernelflume, const FleetRunResult& baseline) {
  if (kernelflume.usd_per_mtok <= 0 || baseline.usd_per_mtok <= 0) return 0;
  return 1 - kernelflume.usd_per_mtok / baseline.usd_per_mtok;
}

core::Json FleetPlotJson(const std::vector<FleetRunResult>& runs, const std::string& title) {
  core::Json out = core::Json::array();
  for (const FleetRunResult& r : runs) {
    core::Json t = core::Json::array(), gpus = core::Json::array(), p99 = core::Json::array();
    for (const FleetWindow& w : r.windows) {
      t.push_back(w.start_s);
      gpus.push_back(w.gpus_mean);
      p99.push_back(w.tokens > 0 ? core::Json(w.tpot_p99_ms) : core::Json(nullptr));
    }
    out.push_back({{"system", FleetSystemName(r.system)},
                   {"usd_per_mtok", r.usd_per_mtok},
                   {"start_s", t},
                   {"gpus_mean", gpus},
                   {"tpot_p99_ms", p99}});
  }
  return {{"title", title}, {"runs", out}};
}

}  // namespace tessera::kernelflume
